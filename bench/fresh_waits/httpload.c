/* httpload: an HTTP/1.1 load client for bench/offcpu_fresh.py. THREADS keep-alive
 * connections, one a thread, each GETting PATH again and again for SECONDS, then prints
 * the requests made.
 *   gcc -O2 -pthread -o httpload httpload.c
 *   httpload PORT THREADS SECONDS PATH
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadclient.h"

static int port, seconds;
static const char *path;
static unsigned long long requests;


/* one response: its header, then Content-Length bytes of body; 0 when done */
static int response(int fd, char *buf, size_t size)
{
	size_t have = 0;
	char *end = NULL;
	while (!end) {
		ssize_t got = read(fd, buf + have, size - have - 1);
		if (got <= 0)
			return -1;
		have += (size_t)got;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
	}
	const char *length = strstr(buf, "Content-Length: ");
	long body = length ? atol(length + 16) : 0;
	long left = body - (long)(have - (size_t)(end + 4 - buf));
	while (left > 0) {
		ssize_t got = read(fd, buf, left < (long)size ? (size_t)left : size);
		if (got <= 0)
			return -1;
		left -= got;
	}
	return 0;
}

static void *client(void *unused)
{
	(void)unused;
	int fd = connect_loopback(port, "httpload");
	char req[256], buf[65536];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
	unsigned long long made = 0;
	double stop = now() + seconds;
	while (now() < stop && write(fd, req, n) == n && response(fd, buf, sizeof buf) == 0)
		made++;
	__atomic_add_fetch(&requests, made, __ATOMIC_RELAXED);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: httpload PORT THREADS SECONDS PATH\n");
		return 2;
	}
	port = atoi(argv[1]);
	int threads = atoi(argv[2]);
	seconds = atoi(argv[3]);
	path = argv[4];
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, client, NULL);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	printf("httpload: %llu requests\n", requests);
	return 0;
}
