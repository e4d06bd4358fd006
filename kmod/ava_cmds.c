// SPDX-License-Identifier: GPL-2.0
/*
 * The command table registry of ava.ko (include/ava/kcall.h,
 * ava_cmds_register()): each cava-generated spec module registers its
 * spec's command table; ava.ko keeps a deep copy with a reference count, so
 * a policed claim (ava_police.c) that said HELLO for the spec keeps its
 * table after the module has unloaded. The registry's mutex is innermost:
 * nothing else is taken under it.
 */
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "ava/kcall.h"
#include "ava_police.h"

#define AVA_CMDS_MAX_FUNCS 65536u
#define AVA_CMDS_MAX_BUFS 65536u

/* ava.ko's copy of a spec module's table. */
struct ava_cmds {
	struct kref kref; /* the registry's (until unregistered) and each claim's */
	struct list_head node; /* in ava_cmds_list while registered */
	struct ava_cmd_table table; /* points at the members below */
	struct ava_cmd_desc *funcs;
	struct ava_cmd_buf *bufs;
	char name[AVA_SPEC_NAME_MAX];
};

static DEFINE_MUTEX(ava_cmds_lock);
static LIST_HEAD(ava_cmds_list);
static u32 ava_cmds_registered; /* under ava_cmds_lock */

static void ava_cmds_free(struct kref *kref)
{
	struct ava_cmds *cmds = container_of(kref, struct ava_cmds, kref);

	kvfree(cmds->funcs);
	kvfree(cmds->bufs);
	kfree(cmds);
}

static struct ava_cmds *ava_cmds_find(u32 spec_id, u64 spec_hash, const char *name)
{
	struct ava_cmds *cmds;

	lockdep_assert_held(&ava_cmds_lock);
	list_for_each_entry(cmds, &ava_cmds_list, node)
		if (cmds->table.spec_id == spec_id && cmds->table.spec_hash == spec_hash &&
		    !strcmp(cmds->name, name))
			return cmds;
	return NULL;
}

/* Whether ava_cmd_police() can rely on the table: 0 or -EINVAL. */
static int ava_cmds_check(const struct ava_cmd_table *t)
{
	size_t len;
	u32 i;

	if (!t || !t->spec_name || !t->funcs)
		return -EINVAL;
	len = strnlen(t->spec_name, AVA_SPEC_NAME_MAX);
	if (!len || len == AVA_SPEC_NAME_MAX)
		return -EINVAL;
	if (t->nfuncs < 1 || t->nfuncs > AVA_CMDS_MAX_FUNCS || t->nbufs > AVA_CMDS_MAX_BUFS ||
	    (t->nbufs && !t->bufs))
		return -EINVAL;
	for (i = 0; i < t->nfuncs; i++)
		if ((u32)t->funcs[i].buf_first + t->funcs[i].buf_count > t->nbufs)
			return -EINVAL;
	return 0;
}

/**
 * ava_cmds_register() - let ava.ko police processes' slots for a spec
 * @t: the spec's command table (<spec>_cmds.h); ava.ko copies it
 *
 * A policed claim whose HELLO names the spec (id, hash and name) is checked
 * against the copy; the claim keeps it until it ends, also after
 * ava_cmds_unregister(). Resource annotations are not copied: the checker
 * does not use them. Process context.
 *
 * Return: 0, -EEXIST (a table with the same spec id, hash and name is
 * registered), -EINVAL (an inconsistent table) or -ENOMEM.
 */
int ava_cmds_register(const struct ava_cmd_table *t)
{
	struct ava_cmds *cmds;
	u32 i;
	int ret;

	ret = ava_cmds_check(t);
	if (ret) {
		pr_warn("ava: refused an inconsistent command table (spec %.*s)\n",
			t && t->spec_name ? (int)strnlen(t->spec_name, AVA_SPEC_NAME_MAX) : 1,
			t && t->spec_name ? t->spec_name : "?");
		return ret;
	}
	cmds = kzalloc(sizeof(*cmds), GFP_KERNEL);
	if (!cmds)
		return -ENOMEM;
	kref_init(&cmds->kref);
	strscpy(cmds->name, t->spec_name, sizeof(cmds->name));
	cmds->funcs = kvmalloc_array(t->nfuncs, sizeof(*cmds->funcs), GFP_KERNEL);
	if (!cmds->funcs)
		goto err_free;
	memcpy(cmds->funcs, t->funcs, t->nfuncs * sizeof(*cmds->funcs));
	/* the names point into the spec module, which may unload first */
	for (i = 0; i < t->nfuncs; i++)
		cmds->funcs[i].name = NULL;
	if (t->nbufs) {
		cmds->bufs = kvmalloc_array(t->nbufs, sizeof(*cmds->bufs), GFP_KERNEL);
		if (!cmds->bufs)
			goto err_free;
		memcpy(cmds->bufs, t->bufs, t->nbufs * sizeof(*cmds->bufs));
	}
	cmds->table.spec_name = cmds->name;
	cmds->table.spec_hash = t->spec_hash;
	cmds->table.spec_id = t->spec_id;
	cmds->table.nfuncs = t->nfuncs;
	cmds->table.funcs = cmds->funcs;
	cmds->table.bufs = cmds->bufs;
	cmds->table.nbufs = t->nbufs;

	mutex_lock(&ava_cmds_lock);
	if (ava_cmds_find(t->spec_id, t->spec_hash, cmds->name)) {
		mutex_unlock(&ava_cmds_lock);
		ret = -EEXIST;
		goto err_free_copy;
	}
	list_add_tail(&cmds->node, &ava_cmds_list);
	ava_cmds_registered++;
	mutex_unlock(&ava_cmds_lock);
	pr_info("ava: command table of spec %s (id %u, %u functions) registered\n", cmds->name,
		t->spec_id, t->nfuncs);
	return 0;

err_free:
	ret = -ENOMEM;
err_free_copy:
	kvfree(cmds->bufs);
	kvfree(cmds->funcs);
	kfree(cmds);
	return ret;
}
EXPORT_SYMBOL_GPL(ava_cmds_register);

/**
 * ava_cmds_unregister() - drop the registry's copy of a spec's table
 * @t: the table given to ava_cmds_register(), found by spec id, hash and name
 *
 * Claims that use the copy keep it until they end; later HELLOs for the
 * spec are refused (AVA_E_UNSUPPORTED). Process context.
 */
void ava_cmds_unregister(const struct ava_cmd_table *t)
{
	struct ava_cmds *cmds = NULL;

	if (!t || !t->spec_name)
		return;
	mutex_lock(&ava_cmds_lock);
	cmds = ava_cmds_find(t->spec_id, t->spec_hash, t->spec_name);
	if (cmds) {
		list_del(&cmds->node);
		ava_cmds_registered--;
	}
	mutex_unlock(&ava_cmds_lock);
	if (!cmds) {
		pr_warn("ava: command table of spec %s unregistered but not registered\n",
			t->spec_name);
		return;
	}
	ava_cmds_put(cmds);
}
EXPORT_SYMBOL_GPL(ava_cmds_unregister);

/**
 * ava_cmds_name_known() - whether a table of that spec name is registered
 * @name: a spec name, NUL-terminated
 *
 * For the refusal of a HELLO that ava_cmds_get() found no table for: the
 * spec is known, but with another id or layout hash (AVA_E_SPEC, as the
 * worker answers), or not at all (AVA_E_UNSUPPORTED).
 *
 * Return: true when a registered table has that name.
 */
bool ava_cmds_name_known(const char *name)
{
	struct ava_cmds *cmds;
	bool known = false;

	mutex_lock(&ava_cmds_lock);
	list_for_each_entry(cmds, &ava_cmds_list, node)
		known = known || !strcmp(cmds->name, name);
	mutex_unlock(&ava_cmds_lock);
	return known;
}

/**
 * ava_cmds_get() - the registered table a HELLO names
 * @spec_id: the HELLO's spec id
 * @spec_hash: its layout hash
 * @name: its spec name, NUL-terminated
 *
 * Return: a counted reference (ava_cmds_put() it), or NULL when no such
 * table is registered.
 */
struct ava_cmds *ava_cmds_get(u32 spec_id, u64 spec_hash, const char *name)
{
	struct ava_cmds *cmds;

	mutex_lock(&ava_cmds_lock);
	cmds = ava_cmds_find(spec_id, spec_hash, name);
	if (cmds)
		kref_get(&cmds->kref);
	mutex_unlock(&ava_cmds_lock);
	return cmds;
}

/**
 * ava_cmds_put() - drop a reference to a table copy
 * @cmds: the copy; freed with the last reference
 */
void ava_cmds_put(struct ava_cmds *cmds)
{
	kref_put(&cmds->kref, ava_cmds_free);
}

/**
 * ava_cmds_table() - the table of a copy, for ava_cmd_police()
 * @cmds: a referenced copy
 *
 * Return: the table; valid while the reference is held.
 */
const struct ava_cmd_table *ava_cmds_table(const struct ava_cmds *cmds)
{
	return &cmds->table;
}

/**
 * ava_cmds_count() - how many tables are registered
 *
 * Return: the count (avactl device).
 */
u32 ava_cmds_count(void)
{
	u32 n;

	mutex_lock(&ava_cmds_lock);
	n = ava_cmds_registered;
	mutex_unlock(&ava_cmds_lock);
	return n;
}

/**
 * ava_cmds_exit() - free the tables left registered at module exit
 *
 * Spec modules depend on ava.ko and unregister at their exit, and no file
 * of /dev/ava is open, so normally nothing is left. A copy something still
 * references is kept (leaked) rather than freed under its user.
 */
void ava_cmds_exit(void)
{
	struct ava_cmds *cmds, *tmp;

	mutex_lock(&ava_cmds_lock);
	list_for_each_entry_safe(cmds, tmp, &ava_cmds_list, node) {
		list_del(&cmds->node);
		ava_cmds_registered--;
		pr_warn("ava: command table of spec %s still registered at exit\n", cmds->name);
		if (WARN_ON(kref_read(&cmds->kref) != 1))
			continue;
		ava_cmds_put(cmds);
	}
	mutex_unlock(&ava_cmds_lock);
}
