// SPDX-License-Identifier: Apache-2.0
/*
 * The sandbox ("pause") process of every pod: it holds the pod's namespaces
 * open, reaps zombies when the pod shares one PID namespace (it is PID 1
 * there), and exits cleanly on SIGINT/SIGTERM so sandboxes stop at once.
 * Single-threaded; all work happens in signal handlers.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(int argc, char **argv)
{
	struct sigaction stop = { .sa_handler = on_stop };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };

	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		puts("pfs-pause");
		return 0;
	}
	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not PID 1, zombies of others are not reaped\n");
	if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) ||
	    sigaction(SIGCHLD, &child, NULL)) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}
