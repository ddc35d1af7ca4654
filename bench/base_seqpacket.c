// SPDX-License-Identifier: MIT
/*
 * base_seqpacket.c - the raw cost of the process backend's transport: one
 * request as sendmsg() on an AF_UNIX SOCK_SEQPACKET socketpair to another
 * process, which answers with one small message (the shape of an 8-byte
 * rare_write: 40-byte head, one 24-byte segment, 8 bytes of data; a 16-byte
 * reply). The partner ends when the socket closes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

struct bench_op base_seqpacket(void);

static int sock = -1;

static void run(void *ctx, uint64_t i)
{
	unsigned char req[72] = {0}, reply[16];

	(void)ctx;
	req[0] = (unsigned char)i;
	if (send(sock, req, sizeof(req), 0) != sizeof(req) ||
	    recv(sock, reply, sizeof(reply), 0) != sizeof(reply))
		abort();
}

static void partner_main(int s)
{
	unsigned char buf[4096], reply[16] = {0};

	for (;;) {
		ssize_t n = recv(s, buf, sizeof(buf), 0);

		if (n <= 0)
			_exit(0);
		reply[0] = buf[0];
		if (send(s, reply, sizeof(reply), 0) != sizeof(reply))
			_exit(1);
	}
}

struct bench_op base_seqpacket(void)
{
	if (sock < 0) {
		int sv[2];
		pid_t pid;

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
			abort();
		pid = fork();
		if (pid < 0)
			abort();
		if (!pid) {
			close(sv[0]);
			partner_main(sv[1]);
		}
		close(sv[1]);
		sock = sv[0];
	}
	return (struct bench_op){"seqpacket round trip", run, NULL, NULL};
}
