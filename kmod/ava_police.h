/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Policed claims of /dev/ava (include/ava/ivshmem.h, "Policed claims"):
 * the command table registry that spec modules fill (ava_cmds_register()
 * of include/ava/kcall.h; ava_cmds.c) and AVA_IOC_SUBMIT, which checks a
 * process's messages against its spec's table before it copies them into
 * the command ring (ava_police.c).
 */
#ifndef AVA_POLICE_H
#define AVA_POLICE_H

#include <linux/compiler_types.h>
#include <linux/types.h>

#include "ava/cmdtab.h"
#include "ava_priv.h"

/* ---- the registry: ava.ko's copies of the spec modules' tables ---- */

struct ava_cmds;

/* A counted reference to the table of (spec_id, spec_hash, name), or NULL. */
struct ava_cmds *ava_cmds_get(u32 spec_id, u64 spec_hash, const char *name);
bool ava_cmds_name_known(const char *name);
void ava_cmds_put(struct ava_cmds *cmds);
const struct ava_cmd_table *ava_cmds_table(const struct ava_cmds *cmds);
u32 ava_cmds_count(void);
/* Module exit: frees what spec modules left registered. */
void ava_cmds_exit(void);

/* ---- policed claims ---- */

/* After the claim: policed state for a policed claim (0 or -ENOMEM). */
int ava_police_open(struct ava_file *af);
/* After the slot was let go. */
void ava_police_release(struct ava_file *af);
long ava_police_submit(struct ava_file *af, void __user *uarg);
/* AVA_IOC_WAKE: ends the slot's waits (they return 0 and re-check). */
void ava_police_wake(struct ava_slot *slot);

#endif /* AVA_POLICE_H */
