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

/* slurp_cmd_rc - a shell command's stdout (malloc'd, NUL-terminated, at
 * most 64 KiB) and, with @rc, its exit code (-1: did not exit). */
__attribute__((unused)) static char *slurp_cmd_rc(const char *cmd, int *rc)
{
	size_t cap = 1 << 16, len = 0, r;
	char *out = malloc(cap);
	FILE *p = popen(cmd, "r");
	int st = -1;

	while (p && out && len + 1 < cap && (r = fread(out + len, 1, cap - len - 1, p)) > 0)
		len += r;
	if (p)
		st = pclose(p);
	if (out)
		out[len] = '\0';
	if (rc)
		*rc = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* slurp_cmd - the same without the exit code. */
__attribute__((unused)) static char *slurp_cmd(const char *cmd)
{
	return slurp_cmd_rc(cmd, NULL);
}

#endif /* PFS_TESTS_SH_H */
