/* SPDX-License-Identifier: MIT */
/*
 * avactl: shows the slots of ava.ko (the guest side of ava over ivshmem) and
 * sets their policy, through the generic netlink family "ava"
 * (include/ava/ivshmem.h).
 *
 *   avactl slots | stats [SLOT] | device
 *   avactl policy SLOT|all [enable|disable] [cmds-per-sec N] [bytes-per-sec N] [mem-quota N]
 *                          [police on|off]
 *   avactl policy [--slot N] --police on|off   (no --slot: every slot)
 *
 * Setting names may also be written with a leading "--". A policed slot
 * (police on) checks its later process claims' commands in ava.ko, against
 * the command tables spec modules registered (avactl device: tables).
 *
 * Exit status: 0 success, 1 failure, 2 usage.
 */
#define _GNU_SOURCE /* libnl headers use struct addrinfo */
#include "ava/ivshmem.h"

#include <errno.h>
#include <inttypes.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_USAGE = 2 };

struct Conn {
  struct nl_sock *sk;
  int family;
};

/* What one request collected: its errno and the replies' attributes, per slot or device. */
struct Reply {
  int error; /* positive errno from the kernel's NLMSG_ERROR, 0 if none */
  void (*on_msg)(struct nlattr **attrs, void *arg);
  void *arg;
};

static const char *progname = "avactl";

static void usage(FILE *out) {
  fprintf(out,
          "usage: %s slots\n"
          "       %s stats [SLOT]\n"
          "       %s device\n"
          "       %s policy SLOT|all [enable|disable] [cmds-per-sec N] [bytes-per-sec N]"
          " [mem-quota N] [police on|off]\n"
          "       %s policy [--slot N] [--police on|off] ...   (no --slot: every slot)\n"
          "policy without settings shows it; 0 means unlimited; police applies to later"
          " claims.\n",
          progname, progname, progname, progname, progname);
}

static int conn_open(struct Conn *c) {
  int ret;

  c->sk = nl_socket_alloc();
  if (!c->sk) {
    fprintf(stderr, "%s: out of memory\n", progname);
    return -1;
  }
  ret = genl_connect(c->sk);
  if (ret < 0) {
    fprintf(stderr, "%s: cannot open a generic netlink socket: %s\n", progname, nl_geterror(ret));
    nl_socket_free(c->sk);
    return -1;
  }
  c->family = genl_ctrl_resolve(c->sk, AVA_GENL_NAME);
  if (c->family < 0) {
    fprintf(stderr, "%s: ava.ko not loaded (no generic netlink family '%s')\n", progname,
            AVA_GENL_NAME);
    nl_socket_free(c->sk);
    return -1;
  }
  return 0;
}

static int on_valid(struct nl_msg *msg, void *arg) {
  struct Reply *r = arg;
  struct nlattr *attrs[AVA_A_MAX + 1];

  if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, AVA_A_MAX, NULL) < 0)
    return NL_SKIP;
  if (r->on_msg)
    r->on_msg(attrs, r->arg);
  return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg) {
  struct Reply *r = arg;

  (void)nla;
  r->error = err->error < 0 ? -err->error : err->error;
  return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg) {
  (void)msg;
  (void)arg;
  return NL_STOP;
}

static const char *explain(int error) {
  switch (error) {
  case EPERM:
  case EACCES:
    return "permission denied (changing policy needs CAP_NET_ADMIN)";
  case ENODEV:
    return "no ivshmem device is bound to ava.ko";
  case ENOENT:
    return "no such slot";
  default:
    return strerror(error);
  }
}

/*
 * Sends one request and feeds each reply to r->on_msg until the kernel's ACK,
 * error or end of dump. Returns 0 or -1 (message printed).
 */
static int conn_request(struct Conn *c, uint8_t cmd, int flags, int64_t slot,
                        int (*add)(struct nl_msg *, void *), void *add_arg, struct Reply *r) {
  struct nl_msg *msg = nlmsg_alloc();
  struct nl_cb *cb = NULL;
  int ret = -1, nlret;

  if (!msg)
    goto out_oom;
  cb = nl_cb_alloc(NL_CB_DEFAULT);
  if (!cb)
    goto out_oom;
  if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags | NLM_F_ACK, cmd,
                   AVA_GENL_VERSION) ||
      (slot >= 0 && nla_put_u32(msg, AVA_A_SLOT, (uint32_t)slot) < 0) ||
      (add && add(msg, add_arg) < 0))
    goto out_oom;
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, r);
  nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, r);
  nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, r);
  nl_cb_err(cb, NL_CB_CUSTOM, on_error, r);
  nlret = nl_send_auto(c->sk, msg);
  if (nlret < 0) {
    fprintf(stderr, "%s: sending the request: %s\n", progname, nl_geterror(nlret));
    goto out;
  }
  r->error = 0;
  nlret = nl_recvmsgs(c->sk, cb);
  if (r->error) {
    fprintf(stderr, "%s: %s\n", progname, explain(r->error));
    goto out;
  }
  if (nlret < 0) {
    fprintf(stderr, "%s: receiving the reply: %s\n", progname, nl_geterror(nlret));
    goto out;
  }
  ret = 0;
  goto out;

out_oom:
  fprintf(stderr, "%s: out of memory building the request\n", progname);
out:
  nl_cb_put(cb);
  nlmsg_free(msg);
  return ret;
}

static uint32_t get_u32(struct nlattr **a, int t) {
  return a[t] ? nla_get_u32(a[t]) : 0;
}

static uint64_t get_u64(struct nlattr **a, int t) {
  return a[t] ? nla_get_u64(a[t]) : 0;
}

static uint8_t get_u8(struct nlattr **a, int t) {
  return a[t] ? nla_get_u8(a[t]) : 0;
}

static const char *guest_state_name(uint32_t s) {
  switch (s) {
  case AVA_SLOT_FREE:
    return "free";
  case AVA_SLOT_CLAIMED:
    return "claimed";
  case AVA_SLOT_RELEASED:
    return "released";
  default:
    return "?";
  }
}

static const char *host_state_name(uint32_t s) {
  switch (s) {
  case AVA_SLOT_IDLE:
    return "idle";
  case AVA_SLOT_SERVING:
    return "serving";
  default:
    return "?"; /* the host wrote something undefined */
  }
}

/* Whether the current claim is policed; "-" when nothing holds the slot. */
static const char *policed_name(struct nlattr **a) {
  if (get_u32(a, AVA_A_GUEST_STATE) != AVA_SLOT_CLAIMED)
    return "-";
  return get_u8(a, AVA_A_POLICED) ? "yes" : "no";
}

static void print_slot_row(struct nlattr **a, void *arg) {
  char pid[16];

  (void)arg;
  /* a kernel connection (kcall.h) holds the slot: there is no process to name */
  if (get_u8(a, AVA_A_KERNEL))
    snprintf(pid, sizeof pid, "kernel");
  else
    snprintf(pid, sizeof pid, "%" PRIu32, get_u32(a, AVA_A_PID));
  printf("%4" PRIu32 "  %-8s  %-8s  %10" PRIu32 "  %7s  %-6s  %-7s  %-6s  %" PRIu64 "\n",
         get_u32(a, AVA_A_SLOT), guest_state_name(get_u32(a, AVA_A_GUEST_STATE)),
         host_state_name(get_u32(a, AVA_A_HOST_STATE)), get_u32(a, AVA_A_GENERATION), pid,
         get_u8(a, AVA_A_BROKEN) ? "yes" : "no", policed_name(a),
         get_u8(a, AVA_A_POLICY_POLICED) ? "on" : "off", get_u64(a, AVA_A_REFUSED));
}

static void print_slot_stats(struct nlattr **a, void *arg) {
  (void)arg;
  printf("slot %" PRIu32 ":\n", get_u32(a, AVA_A_SLOT));
  printf("  kicks       %" PRIu64 "\n", get_u64(a, AVA_A_KICKS));
  printf("  waits       %" PRIu64 "\n", get_u64(a, AVA_A_WAITS));
  printf("  interrupts  %" PRIu64 "\n", get_u64(a, AVA_A_INTERRUPTS));
  printf("  timeouts    %" PRIu64 "\n", get_u64(a, AVA_A_TIMEOUTS));
  printf("  refused     %" PRIu64 " (calls a command table refused in the guest)\n",
         get_u64(a, AVA_A_REFUSED));
  printf("  commands    %" PRIu64 " (host)\n", get_u64(a, AVA_A_COMMANDS));
  printf("  bytes in    %" PRIu64 " (host)\n", get_u64(a, AVA_A_BYTES_IN));
  printf("  bytes out   %" PRIu64 " (host)\n", get_u64(a, AVA_A_BYTES_OUT));
  printf("  errors      %" PRIu64 " (host)\n", get_u64(a, AVA_A_ERRORS));
  printf("  policed     %s (this claim)\n", policed_name(a));
  printf("  police      %s (later claims)\n", get_u8(a, AVA_A_POLICY_POLICED) ? "on" : "off");
}

static void print_limit(const char *name, uint64_t v) {
  if (v)
    printf("  %-14s %" PRIu64 "\n", name, v);
  else
    printf("  %-14s unlimited\n", name);
}

static void print_slot_policy(struct nlattr **a, void *arg) {
  (void)arg;
  printf("slot %" PRIu32 ": %s\n", get_u32(a, AVA_A_SLOT),
         get_u8(a, AVA_A_POLICY_ENABLED) ? "enabled" : "disabled");
  print_limit("cmds-per-sec", get_u64(a, AVA_A_POLICY_CMDS_PER_SEC));
  print_limit("bytes-per-sec", get_u64(a, AVA_A_POLICY_BYTES_PER_SEC));
  print_limit("mem-quota", get_u64(a, AVA_A_POLICY_MEM_QUOTA));
  printf("  %-14s %s\n", "police", get_u8(a, AVA_A_POLICY_POLICED) ? "on" : "off");
}

static void print_device(struct nlattr **a, void *arg) {
  uint32_t vectors = get_u32(a, AVA_A_VECTORS);

  (void)arg;
  printf("host        %s\n", get_u8(a, AVA_A_HOST_UP) ? "up" : "down");
  printf("slots       %" PRIu32 " (%" PRIu32 " open)\n", get_u32(a, AVA_A_NSLOTS),
         get_u32(a, AVA_A_OPEN_SLOTS));
  printf("slot size   %" PRIu64 " bytes\n", get_u64(a, AVA_A_SLOT_SIZE));
  if (vectors)
    printf("interrupts  MSI-X, %" PRIu32 " vectors\n", vectors);
  else
    printf("interrupts  none (waits poll)\n");
  printf("kicks       %" PRIu64 "\n", get_u64(a, AVA_A_KICKS));
  printf("waits       %" PRIu64 "\n", get_u64(a, AVA_A_WAITS));
  printf("irqs        %" PRIu64 "\n", get_u64(a, AVA_A_INTERRUPTS));
  printf("timeouts    %" PRIu64 "\n", get_u64(a, AVA_A_TIMEOUTS));
  printf("tables      %" PRIu32 " (command tables registered)\n", get_u32(a, AVA_A_TABLES));
}

/* Parses a slot number, or "all" as -1 when allowed. Returns false on garbage. */
static bool parse_slot(const char *s, bool all_ok, int64_t *slot) {
  char *end;
  unsigned long v;

  if (all_ok && !strcmp(s, "all")) {
    *slot = -1;
    return true;
  }
  errno = 0;
  v = strtoul(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-' || v >= AVA_DEV_MAX_SLOTS)
    return false;
  *slot = (int64_t)v;
  return true;
}

static bool parse_u64(const char *s, uint64_t *out) {
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-')
    return false;
  *out = v;
  return true;
}

struct Policy {
  int enabled; /* -1: unchanged */
  int police;  /* -1: unchanged */
  bool has_cmds, has_bytes, has_mem;
  uint64_t cmds, bytes, mem;
};

static int add_policy(struct nl_msg *msg, void *arg) {
  const struct Policy *p = arg;

  if (p->enabled >= 0 && nla_put_u8(msg, AVA_A_POLICY_ENABLED, (uint8_t)p->enabled) < 0)
    return -1;
  if (p->has_cmds && nla_put_u64(msg, AVA_A_POLICY_CMDS_PER_SEC, p->cmds) < 0)
    return -1;
  if (p->has_bytes && nla_put_u64(msg, AVA_A_POLICY_BYTES_PER_SEC, p->bytes) < 0)
    return -1;
  if (p->has_mem && nla_put_u64(msg, AVA_A_POLICY_MEM_QUOTA, p->mem) < 0)
    return -1;
  if (p->police >= 0 && nla_put_u8(msg, AVA_A_POLICY_POLICED, (uint8_t)p->police) < 0)
    return -1;
  return 0;
}

/* Returns an exit status. */
static int parse_policy(int argc, char **argv, struct Policy *p) {
  int i;

  memset(p, 0, sizeof(*p));
  p->enabled = -1;
  p->police = -1;
  for (i = 0; i < argc; i++) {
    /* "--police on" reads as "police on" */
    const char *name = strncmp(argv[i], "--", 2) ? argv[i] : argv[i] + 2;
    uint64_t *value = NULL;

    if (!strcmp(name, "enable")) {
      p->enabled = 1;
    } else if (!strcmp(name, "disable")) {
      p->enabled = 0;
    } else if (!strcmp(name, "police")) {
      if (i + 1 >= argc || (strcmp(argv[i + 1], "on") && strcmp(argv[i + 1], "off"))) {
        fprintf(stderr, "%s: %s needs on or off\n", progname, argv[i]);
        return EXIT_USAGE;
      }
      p->police = !strcmp(argv[++i], "on");
    } else if (!strcmp(name, "cmds-per-sec")) {
      p->has_cmds = true;
      value = &p->cmds;
    } else if (!strcmp(name, "bytes-per-sec")) {
      p->has_bytes = true;
      value = &p->bytes;
    } else if (!strcmp(name, "mem-quota")) {
      p->has_mem = true;
      value = &p->mem;
    } else {
      fprintf(stderr, "%s: unknown policy setting '%s'\n", progname, argv[i]);
      return EXIT_USAGE;
    }
    if (!value)
      continue;
    if (i + 1 >= argc || !parse_u64(argv[i + 1], value)) {
      fprintf(stderr, "%s: %s needs a number\n", progname, argv[i]);
      return EXIT_USAGE;
    }
    i++;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct Reply r = {0};
  struct Conn c;
  struct Policy pol;
  const char *cmd;
  int64_t slot = -1;
  int settings = 0; /* policy: the first setting's index in argv */
  int ret;

  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  /* check the whole command line before talking to the kernel */
  if (!strcmp(cmd, "slots") || !strcmp(cmd, "device")) {
    if (argc != 2)
      goto bad_usage;
  } else if (!strcmp(cmd, "stats")) {
    if (argc > 3 || (argc == 3 && !parse_slot(argv[2], false, &slot)))
      goto bad_usage;
  } else if (!strcmp(cmd, "policy")) {
    if (argc < 3)
      goto bad_usage;
    if (!strcmp(argv[2], "--slot")) {
      if (argc < 4 || !parse_slot(argv[3], true, &slot))
        goto bad_usage;
      settings = 4;
    } else if (!strncmp(argv[2], "--", 2)) {
      settings = 2; /* settings only: every slot */
    } else {
      if (!parse_slot(argv[2], true, &slot))
        goto bad_usage;
      settings = 3;
    }
    ret = parse_policy(argc - settings, argv + settings, &pol);
    if (ret)
      return ret;
  } else {
    fprintf(stderr, "%s: unknown command '%s'\n", progname, cmd);
    goto bad_usage;
  }

  if (conn_open(&c))
    return 1;
  if (!strcmp(cmd, "slots")) {
    printf("SLOT  GUEST     HOST             GEN      PID  BROKEN  POLICED  POLICE  REFUSED\n");
    r.on_msg = print_slot_row;
    ret = conn_request(&c, AVA_CMD_GET_SLOT, NLM_F_DUMP, -1, NULL, NULL, &r);
  } else if (!strcmp(cmd, "stats")) {
    r.on_msg = print_slot_stats;
    ret = conn_request(&c, AVA_CMD_GET_SLOT, slot < 0 ? NLM_F_DUMP : 0, slot, NULL, NULL, &r);
  } else if (!strcmp(cmd, "device")) {
    r.on_msg = print_device;
    ret = conn_request(&c, AVA_CMD_GET_DEVICE, 0, -1, NULL, NULL, &r);
  } else if (argc == settings) {
    r.on_msg = print_slot_policy;
    ret = conn_request(&c, AVA_CMD_GET_SLOT, slot < 0 ? NLM_F_DUMP : 0, slot, NULL, NULL, &r);
  } else {
    ret = conn_request(&c, AVA_CMD_SET_POLICY, 0, slot, add_policy, &pol, &r);
  }
  nl_socket_free(c.sk);
  return ret ? 1 : 0;

bad_usage:
  usage(stderr);
  return EXIT_USAGE;
}
