/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: fresh random bytes from the kernel for nonces (the replication
 * HELLO's, a transfer's CHALLENGE). */
#ifndef PFS_UTIL_RANDOM_H
#define PFS_UTIL_RANDOM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>

/* pfs_random_fill - @n bytes of getrandom(2) into @buf: 0, or -errno. A
 * signal is retried; getrandom blocks only before the pool is initialised
 * at boot. */
static inline int pfs_random_fill(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		got += (size_t)r;
	}
	return 0;
}

#endif /* PFS_UTIL_RANDOM_H */
