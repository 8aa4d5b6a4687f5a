/* SPDX-License-Identifier: Apache-2.0 */
/* sh() of the test programs: run a shell command built like printf. */
#ifndef PFS_TESTS_SH_H
#define PFS_TESTS_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* system(): the command's exit code, -1 when it did not exit. */
__attribute__((format(printf, 1, 2), unused)) static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#endif /* PFS_TESTS_SH_H */
