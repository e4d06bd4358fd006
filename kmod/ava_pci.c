// SPDX-License-Identifier: GPL-2.0
/*
 * ava.ko PCI side: binds the ivshmem device (1af4:1110), checks the ava
 * device header the host wrote into BAR2, sets up MSI-X and /dev/ava, and
 * tears it all down on unbind while files may still be open.
 */
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "ava_layout_check.h"
#include "ava_priv.h"

#define AVA_PCI_VENDOR_REDHAT 0x1af4
#define AVA_PCI_DEVICE_IVSHMEM 0x1110
#define AVA_PCI_BAR_REGS 0
#define AVA_PCI_BAR_SHM 2

DEFINE_MUTEX(ava_global_lock);
struct ava_dev *ava_global_dev;
/* a device is bound (also while probe() or remove() runs): a second one is refused */
static bool ava_pci_bound;

static void ava_dev_free(struct kref *kref)
{
	struct ava_dev *dev = container_of(kref, struct ava_dev, kref);

	pci_dev_put(dev->pdev);
	kfree(dev);
}

/**
 * ava_dev_put() - drop a reference to a device
 * @dev: the device; freed with the last reference (remove() holds one, each
 *       open file one)
 */
void ava_dev_put(struct ava_dev *dev)
{
	kref_put(&dev->kref, ava_dev_free);
}

/**
 * ava_dev_ring() - ring the host's doorbell for one interrupt vector
 * @dev: the device; the caller keeps it from going away (dev->io or a live bind)
 * @vector: AVA_DEV_CTL_VECTOR or AVA_DEV_SLOT_VECTOR(slot)
 *
 * Without MSI-X (ivshmem-plain) there is nobody to ring: the host polls.
 * writel() orders the caller's earlier stores to shared memory before the
 * doorbell write.
 */
void ava_dev_ring(struct ava_dev *dev, u32 vector)
{
	if (!dev->doorbell)
		return;
	writel((dev->hdr.host_peer << 16) | vector, dev->regs + AVA_REG_DOORBELL);
}

/**
 * ava_dev_host_state() - the host_state the host currently shows
 * @dev: the device, shared memory mapped
 *
 * Return: a number only ever compared with AVA_HOST_UP.
 */
u32 ava_dev_host_state(struct ava_dev *dev)
{
	const struct ava_dev_hdr *live = dev->shm;

	return READ_ONCE(live->host_state);
}

/**
 * ava_dev_entry() - the slot table entry of a slot
 * @dev: the device
 * @index: slot number, below the validated nslots
 *
 * Return: pointer into shared memory.
 */
struct ava_slot_entry *ava_dev_entry(struct ava_dev *dev, u32 index)
{
	return (struct ava_slot_entry *)((u8 *)dev->shm + AVA_DEV_ENTRY_OFF(index));
}

/**
 * ava_dev_region() - the region header of a slot
 * @dev: the device
 * @index: slot number, below the validated nslots
 *
 * Return: pointer into shared memory.
 */
struct ava_region_hdr *ava_dev_region(struct ava_dev *dev, u32 index)
{
	return (struct ava_region_hdr *)((u8 *)dev->shm + ava_layout_slot_off(&dev->hdr, index));
}

/* Checks the copy of the header (ava_layout_check.h); names the rule it breaks. */
static int ava_pci_check_hdr(struct device *d, const struct ava_dev_hdr *h, resource_size_t bar_len)
{
	const char *why = ava_layout_check_hdr(h, bar_len, PAGE_SIZE);

	if (!why)
		return 0;
	dev_err(d, "device header refused: %s\n", why);
	dev_err(d, "  magic %#x version %u features %#x total_size %llu (BAR2 %llu) nslots %u "
		"vectors %u slots_off %llu slot_size %llu cmd_size %llu reply_size %llu "
		"heap_size %llu host_peer %u\n", h->magic, h->version, h->features, h->total_size,
		(u64)bar_len, h->nslots, h->vectors, h->slots_off, h->slot_size, h->cmd_size,
		h->reply_size, h->heap_size, h->host_peer);
	return -EINVAL;
}

static irqreturn_t ava_pci_irq(int irq, void *data)
{
	struct ava_vec *vec = data;
	struct ava_dev *dev = vec->dev;
	struct ava_slot *slot;
	u32 i;

	atomic64_inc(&dev->irqs);
	if (dev->per_slot_vectors && vec->vector != AVA_DEV_CTL_VECTOR) {
		slot = &dev->slots[vec->vector - 1];
		atomic64_inc(&slot->interrupts);
		atomic_inc(&slot->irq_seq);
		wake_up_all(&slot->wq);
		return IRQ_HANDLED;
	}
	/* the control vector (or a shared one): every waiter re-checks its slot */
	for (i = 0; i < dev->hdr.nslots; i++) {
		slot = &dev->slots[i];
		if (!dev->per_slot_vectors) {
			atomic64_inc(&slot->interrupts);
			atomic_inc(&slot->irq_seq);
		}
		wake_up_all(&slot->wq);
	}
	return IRQ_HANDLED;
}

static void ava_pci_free_irqs(struct ava_dev *dev, unsigned int requested)
{
	while (requested--)
		devm_free_irq(&dev->pdev->dev, pci_irq_vector(dev->pdev, requested),
			      &dev->vecs[requested]);
	pci_free_irq_vectors(dev->pdev);
	dev->nvecs = 0;
	dev->doorbell = false;
}

/* MSI-X if the device has it (ivshmem-doorbell); none at all means polling. */
static int ava_pci_setup_irqs(struct ava_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	unsigned int want = min(dev->hdr.vectors, 1 + dev->hdr.nslots);
	unsigned int i;
	int nvec, ret;

	nvec = pci_alloc_irq_vectors(pdev, 1, want, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_info(&pdev->dev, "no MSI-X (ivshmem-plain?): waits poll, kicks are no-ops\n");
		return 0;
	}
	for (i = 0; i < nvec; i++) {
		dev->vecs[i].dev = dev;
		dev->vecs[i].vector = i;
		ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, i), ava_pci_irq, 0,
				       AVA_DRV_NAME, &dev->vecs[i]);
		if (ret) {
			dev_err(&pdev->dev, "requesting vector %u: %d\n", i, ret);
			ava_pci_free_irqs(dev, i);
			return ret;
		}
	}
	dev->nvecs = nvec;
	dev->doorbell = true;
	dev->per_slot_vectors = nvec >= 1 + dev->hdr.nslots;
	return 0;
}

static int ava_pci_map(struct ava_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int ret;

	ret = pcim_iomap_regions(pdev, BIT(AVA_PCI_BAR_REGS), AVA_DRV_NAME);
	if (ret) {
		dev_err(&pdev->dev, "mapping BAR0: %d\n", ret);
		return ret;
	}
	dev->regs = pcim_iomap_table(pdev)[AVA_PCI_BAR_REGS];
	if (!(pci_resource_flags(pdev, AVA_PCI_BAR_SHM) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "BAR2 is not memory\n");
		return -ENODEV;
	}
	dev->shm_phys = pci_resource_start(pdev, AVA_PCI_BAR_SHM);
	dev->shm_len = pci_resource_len(pdev, AVA_PCI_BAR_SHM);
	if (dev->shm_len < AVA_DEV_TABLE_OFF + PAGE_SIZE) {
		dev_err(&pdev->dev, "BAR2 too small (%llu bytes)\n", (u64)dev->shm_len);
		return -ENODEV;
	}
	/*
	 * BAR2 is ordinary RAM on the host: map it write-back, and do not
	 * request it, so that /sys/.../resource2 stays mappable as well.
	 */
	dev->shm = devm_memremap(&pdev->dev, dev->shm_phys, dev->shm_len, MEMREMAP_WB);
	if (IS_ERR(dev->shm)) {
		ret = PTR_ERR(dev->shm);
		dev_err(&pdev->dev, "mapping BAR2: %d\n", ret);
		return ret;
	}
	return 0;
}

static void ava_pci_init_slots(struct ava_dev *dev)
{
	u32 i;

	for (i = 0; i < AVA_DEV_MAX_SLOTS; i++) {
		struct ava_slot *slot = &dev->slots[i];

		slot->dev = dev;
		slot->index = i;
		init_waitqueue_head(&slot->wq);
	}
}

static int ava_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct ava_dev *dev;
	int ret;

	mutex_lock(&ava_global_lock);
	if (ava_pci_bound) {
		mutex_unlock(&ava_global_lock);
		dev_err(&pdev->dev, "another ivshmem device is already bound to ava: -EBUSY\n");
		return -EBUSY;
	}
	ava_pci_bound = true;
	mutex_unlock(&ava_global_lock);

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev) {
		ret = -ENOMEM;
		goto err_unbind;
	}
	kref_init(&dev->kref);
	dev->pdev = pci_dev_get(pdev);
	init_rwsem(&dev->io);
	mutex_init(&dev->lock);
	INIT_LIST_HEAD(&dev->files);
	INIT_LIST_HEAD(&dev->kconns);
	ava_pci_init_slots(dev);

	ret = pcim_enable_device(pdev);
	if (ret) {
		dev_err(&pdev->dev, "enabling device: %d\n", ret);
		goto err_put;
	}
	/* QEMU drops MSI-X messages of a device that is not bus master */
	pci_set_master(pdev);
	ret = ava_pci_map(dev);
	if (ret)
		goto err_put;
	memcpy(&dev->hdr, dev->shm, sizeof(dev->hdr));
	ret = ava_pci_check_hdr(&pdev->dev, &dev->hdr, dev->shm_len);
	if (ret)
		goto err_put;
	ret = ava_pci_setup_irqs(dev);
	if (ret)
		goto err_put;
	ava_slot_release_stale(dev);

	dev->misc.minor = MISC_DYNAMIC_MINOR;
	dev->misc.name = AVA_DRV_NAME;
	dev->misc.fops = &ava_slot_fops;
	dev->misc.parent = &pdev->dev;
	dev->misc.mode = 0666;
	ret = misc_register(&dev->misc);
	if (ret) {
		dev_err(&pdev->dev, "registering /dev/ava: %d\n", ret);
		goto err_free_irqs;
	}
	pci_set_drvdata(pdev, dev);
	mutex_lock(&ava_global_lock);
	ava_global_dev = dev;
	mutex_unlock(&ava_global_lock);
	dev_info(&pdev->dev, "%u slots of %llu bytes, %s, host peer %u, IVPosition %d\n",
		 dev->hdr.nslots, dev->hdr.slot_size,
		 dev->doorbell ? (dev->per_slot_vectors ? "a vector per slot" : "shared vectors")
			       : "polling",
		 dev->hdr.host_peer, (int)readl(dev->regs + AVA_REG_IVPOSITION));
	return 0;

err_free_irqs:
	ava_pci_free_irqs(dev, dev->nvecs);
err_put:
	ava_dev_put(dev);
err_unbind:
	mutex_lock(&ava_global_lock);
	ava_pci_bound = false;
	mutex_unlock(&ava_global_lock);
	return ret;
}

static void ava_pci_remove(struct pci_dev *pdev)
{
	struct ava_dev *dev = pci_get_drvdata(pdev);
	u32 i;

	mutex_lock(&ava_global_lock);
	ava_global_dev = NULL;
	mutex_unlock(&ava_global_lock);
	misc_deregister(&dev->misc);

	mutex_lock(&dev->lock);
	WRITE_ONCE(dev->gone, true);
	/* kernel callers waiting for replies get -ENODEV now, not at their timeout */
	ava_kconn_dev_gone(dev);
	mutex_unlock(&dev->lock);
	/*
	 * Every sleeper inside shared memory (AVA_IOC_WAIT, a policed submit
	 * waiting for ring space, a kernel connection's reader or sender)
	 * waits on its slot's queue with dev->gone in its condition: woken, it
	 * returns -ENODEV and drops dev->io, so the write lock below is
	 * bounded. Once we have had it, nobody is inside BAR0 or BAR2, and
	 * whoever takes dev->io later looks at gone before any shared byte:
	 * devres may unmap both BARs after we return.
	 */
	for (i = 0; i < dev->hdr.nslots; i++)
		wake_up_all(&dev->slots[i].wq);
	down_write(&dev->io);
	up_write(&dev->io);
	/* no mmap() can be in flight now: zap what user space mapped of BAR2 */
	ava_slot_zap_all(dev);
	ava_pci_free_irqs(dev, dev->nvecs);
	ava_dev_put(dev);

	mutex_lock(&ava_global_lock);
	ava_pci_bound = false;
	mutex_unlock(&ava_global_lock);
}

static const struct pci_device_id ava_pci_ids[] = {
	{ PCI_DEVICE(AVA_PCI_VENDOR_REDHAT, AVA_PCI_DEVICE_IVSHMEM) },
	{ }
};
MODULE_DEVICE_TABLE(pci, ava_pci_ids);

static struct pci_driver ava_pci_driver = {
	.name = AVA_DRV_NAME,
	.id_table = ava_pci_ids,
	.probe = ava_pci_probe,
	.remove = ava_pci_remove,
};

/**
 * ava_pci_register() - register the PCI driver
 *
 * Return: 0 or -errno.
 */
int ava_pci_register(void)
{
	return pci_register_driver(&ava_pci_driver);
}

/**
 * ava_pci_unregister() - unregister the PCI driver (removes a bound device)
 */
void ava_pci_unregister(void)
{
	pci_unregister_driver(&ava_pci_driver);
}
