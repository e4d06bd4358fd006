/* SPDX-License-Identifier: MIT */
/*
 * The netlink carrier of kernel connections (include/ava/kcall.h) where
 * there is no ivshmem device: ava.ko reaches a user-space worker on the same
 * kernel (`ava worker --netlink`) through the generic netlink family
 * "ava_call". Shared by ava.ko and the worker (transport/netlink_channel.cpp).
 *
 *   worker  REGISTER            -> ava.ko   (CAP_NET_ADMIN; one worker at a time;
 *                                            the reply carries AVA_KNL_A_SHM_SIZE)
 *   ava.ko  MSG {CONN, DATA}    -> worker   an ava message (wire.h) of connection CONN
 *   worker  MSG {CONN, DATA}    -> ava.ko
 *   either  MSG {CONN, SHM_LEN} instead of DATA: the message is the first SHM_LEN
 *                                bytes of the sender's half of CONN's shared area
 *   either  MSG {..., MORE}      the message continues in the next MSG of CONN
 *   worker  RELEASE {CONN}      -> ava.ko   it copied ava.ko's shared-area message out
 *   worker  CLOSE {CONN}        -> ava.ko   the worker ended the session: CONN fails
 *
 * A connection starts with its HELLO message (a new CONN id); ids are not
 * reused soon (cyclic). Messages up to AVA_KNL_INLINE_MAX travel inline in
 * AVA_KNL_A_DATA; larger ones in the shared area, in pieces of at most its
 * half: each MSG carries the next piece (SHM_LEN bytes), all but the last
 * with AVA_KNL_A_MORE, the first starting with the message header whose
 * total_len the pieces add up to exactly; a sender sends the pieces of one
 * message before anything else of CONN. The shared area is 2 * SHM_SIZE
 * bytes per connection, which the worker maps from the character device
 * /dev/ava_call at offset conn_id * 2 * SHM_SIZE (mmap, MAP_SHARED, exactly
 * that length). Bytes [0, SHM_SIZE) are ava.ko's (one piece at a time, free
 * again at RELEASE), [SHM_SIZE, 2 * SHM_SIZE) the worker's: ava.ko copies a
 * worker piece out before the worker's send returns (netlink delivery to the
 * kernel is synchronous).
 *
 * ava.ko trusts nothing of it: lengths, ids and the message headers are
 * checked on its own copy. When the worker's netlink socket closes (it
 * died), every netlink connection fails with -EPIPE.
 */
#ifndef AVA_KNETLINK_H
#define AVA_KNETLINK_H

#define AVA_KNL_GENL_NAME "ava_call"
#define AVA_KNL_GENL_VERSION 1
#define AVA_KNL_DEVICE "/dev/ava_call"

/* The largest message sent inline (AVA_KNL_A_DATA); above it, the shared area. */
#define AVA_KNL_INLINE_MAX (16u * 1024u)

enum ava_knl_cmd {
	AVA_KNL_CMD_UNSPEC,
	AVA_KNL_CMD_REGISTER,
	AVA_KNL_CMD_MSG,
	AVA_KNL_CMD_RELEASE,
	AVA_KNL_CMD_CLOSE,
	__AVA_KNL_CMD_MAX,
};
#define AVA_KNL_CMD_MAX (__AVA_KNL_CMD_MAX - 1)

enum ava_knl_attr {
	AVA_KNL_A_UNSPEC,
	AVA_KNL_A_PAD,
	AVA_KNL_A_CONN,     /* u32: the kernel connection */
	AVA_KNL_A_DATA,     /* binary: one whole ava message */
	AVA_KNL_A_SHM_LEN,  /* u64: the message is in the sender's half of the shared area */
	AVA_KNL_A_SHM_SIZE, /* u64: REGISTER reply: bytes of each half of a connection's area */
	AVA_KNL_A_MORE,     /* flag: the message continues in the next MSG of the connection */
	__AVA_KNL_A_MAX,
};
#define AVA_KNL_A_MAX (__AVA_KNL_A_MAX - 1)

#endif /* AVA_KNETLINK_H */
