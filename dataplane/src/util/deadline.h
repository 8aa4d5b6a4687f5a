/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: timed waits on CLOCK_MONOTONIC, so that a wall clock stepped
 * back never stalls one: a condition variable on that clock, and an
 * absolute deadline on it for pthread_cond_timedwait. */
#ifndef PFS_UTIL_DEADLINE_H
#define PFS_UTIL_DEADLINE_H

#include <pthread.h>
#include <time.h>

static inline void pfs_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

/* pfs_deadline_ms - @ms from now on CLOCK_MONOTONIC into @ts. */
static inline void pfs_deadline_ms(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

#endif /* PFS_UTIL_DEADLINE_H */
