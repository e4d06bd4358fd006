// SPDX-License-Identifier: GPL-2.0
/*
 * ava.ko: the guest side of ava over ivshmem. See include/ava/ivshmem.h for
 * the shared-memory layout, the /dev/ava ioctls and the netlink family.
 */
#include <linux/module.h>

#include "ava_kcall_priv.h"
#include "ava_police.h"

unsigned int ava_wait_max_ms = 60000;
module_param_named(wait_max_ms, ava_wait_max_ms, uint, 0644);
MODULE_PARM_DESC(wait_max_ms, "longest AVA_IOC_WAIT in milliseconds (default 60000)");

bool ava_police_all;
module_param_named(police, ava_police_all, bool, 0444);
MODULE_PARM_DESC(police, "police processes' claims of every slot from probe on, as "
			 "`avactl policy all police on` does (default off)");

static int __init ava_init(void)
{
	int ret;

	/* registered first: avactl gets -ENODEV, not "no family", while no device is bound */
	ret = ava_netlink_register();
	if (ret)
		return ret;
	ret = ava_knl_register();
	if (ret)
		goto err_unregister_netlink;
	ret = ava_pci_register();
	if (ret)
		goto err_unregister_knl;
	return 0;

err_unregister_knl:
	ava_knl_unregister();
err_unregister_netlink:
	ava_netlink_unregister();
	return ret;
}

static void __exit ava_exit(void)
{
	ava_pci_unregister();
	ava_knl_unregister();
	ava_netlink_unregister();
	ava_cmds_exit();
}

module_init(ava_init);
module_exit(ava_exit);

MODULE_DESCRIPTION("ava: remoted accelerator APIs over ivshmem");
MODULE_AUTHOR("ava project");
MODULE_LICENSE("GPL");
