/* What the load clients (mcload.c, httpload.c) share: the monotonic clock and a
 * TCP_NODELAY connection to the server on 127.0.0.1:PORT (WHO names the client in errors). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int connect_loopback(int port, const char *who)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(port)};
	at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&at, sizeof at) != 0) {
		fprintf(stderr, "%s: connect: ", who);
		perror(NULL);
		exit(1);
	}
	return fd;
}
