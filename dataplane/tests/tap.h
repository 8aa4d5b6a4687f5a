/* SPDX-License-Identifier: Apache-2.0 */
/* A tiny TAP harness: each test program has a table of {name, fn}; a test
 * returns TAP_PASS, TAP_FAIL, or TAP_SKIP after tap_skip("reason"). The
 * program prints `1..N`, one line per check, a `# N skipped` comment and
 * finally `N passed, N failed`; it exits non-zero if anything failed.
 * Skips are never counted as passes, nor are setup and cleanup steps
 * (.setup = true): they print `# step ok: name`, and one that fails (or
 * skips: the checks after it would test nothing) counts as a failure. */
#ifndef PFS_TESTS_TAP_H
#define PFS_TESTS_TAP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The tables list {name, fn} and add .setup = true to setup and cleanup
 * steps: a setup left out is false, which is what that warning is about. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

enum { TAP_PASS = 0, TAP_FAIL = 1, TAP_SKIP = 2 };

struct tap_test {
	const char *name;
	int (*fn)(void);
	bool setup; /* a setup or cleanup step, not a check */
};

static char tap_skip_reason[256];

__attribute__((format(printf, 1, 2), unused)) static int tap_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tap_skip_reason, sizeof(tap_skip_reason), fmt, ap);
	va_end(ap);
	return TAP_SKIP;
}

/* Diagnostic line; TAP consumers show `#` lines with the failure. */
#define tap_diag(...)                \
	do {                         \
		printf("# ");        \
		printf(__VA_ARGS__); \
		printf("\n");        \
	} while (0)

/* Check a condition; on failure print where and fail the test. */
#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			printf("# %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                              \
			printf("\n");                                                     \
			return TAP_FAIL;                                                  \
		}                                                                         \
	} while (0)

static int tap_run(const struct tap_test *t, int n)
{
	int pass = 0, fail = 0, skip = 0, checks = 0, k = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++)
		checks += !t[i].setup;
	printf("1..%d\n", checks);
	for (int i = 0; i < n; i++) {
		int r;

		tap_skip_reason[0] = '\0';
		r = t[i].fn();
		if (t[i].setup) {
			if (r == TAP_PASS) {
				printf("# step ok: %s\n", t[i].name);
			} else {
				printf("# step FAILED: %s%s%s\n", t[i].name,
				       r == TAP_SKIP ? ": skipped: " : "", tap_skip_reason);
				fail++;
			}
			continue;
		}
		k++;
		if (r == TAP_PASS) {
			printf("ok %d %s\n", k, t[i].name);
			pass++;
		} else if (r == TAP_SKIP) {
			printf("ok %d %s # SKIP %s\n", k, t[i].name, tap_skip_reason);
			skip++;
		} else {
			printf("not ok %d %s\n", k, t[i].name);
			fail++;
		}
	}
	printf("# %d skipped\n", skip);
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}

#define TAP_MAIN(tests)                                                         \
	int main(void)                                                          \
	{                                                                       \
		return tap_run(tests, (int)(sizeof(tests) / sizeof(tests[0]))); \
	}

#endif /* PFS_TESTS_TAP_H */
