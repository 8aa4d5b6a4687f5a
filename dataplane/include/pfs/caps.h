/* SPDX-License-Identifier: Apache-2.0 */
/* Capabilities the AF_XDP link needs, checked in the effective set before
 * the kernel is asked, so a failure names what is missing instead of a bare
 * EPERM. Measured on kernel 6.x: an AF_XDP socket needs CAP_NET_RAW; loading
 * and attaching our XDP program needs CAP_BPF and CAP_NET_ADMIN; pinning a
 * UMEM above RLIMIT_MEMLOCK needs CAP_IPC_LOCK. */
#ifndef PFS_CAPS_H
#define PFS_CAPS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/capability.h>

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Bit masks over capability numbers (1ULL << CAP_x). */
#define PFS_CAP(c) (1ULL << (c))

/* pfs_caps_effective - the calling thread's effective set as a bit mask;
 * 0 and errno set if capget fails. */
uint64_t pfs_caps_effective(void);

/* pfs_caps_missing - the capabilities of @want not in @have. */
static inline uint64_t pfs_caps_missing(uint64_t want, uint64_t have)
{
	return want & ~have;
}

/* pfs_caps_names - "CAP_NET_ADMIN,CAP_BPF" for a mask, into @buf (always
 * terminated); returns @buf. Unknown bits print as "cap_N". */
char *pfs_caps_names(uint64_t mask, char *buf, size_t n);

/* pfs_caps_require - 0 when every capability of @want is effective; else
 * -EPERM with "missing CAP_X (needed to @what)" in @why. */
int pfs_caps_require(uint64_t want, const char *what, char *why, size_t n);

#endif /* PFS_CAPS_H */
