/* mcload: a memcached load client for bench/offcpu_fresh.py. THREADS connections, one a
 * thread, each sending `set` then `get` of a random key (of KEYS) with a VALUE-byte value
 * (every value one size: one slab class, one LRU, the slab allocator's global lock) for
 * SECONDS, then prints the requests it made.
 *   gcc -O2 -pthread -o mcload mcload.c
 *   mcload PORT THREADS SECONDS [KEYS] [VALUE]
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

static int port, seconds, keys = 100000, value = 200;
static unsigned long long requests;


/* reads until the reply's end marker (`STORED\r\n` or `END\r\n`) */
static int reply(int fd, char *buf, size_t size, const char *end)
{
	size_t have = 0, n = strlen(end);
	while (have < n || memcmp(buf + have - n, end, n) != 0) {
		ssize_t got = read(fd, buf + have, size - have);
		if (got <= 0)
			return -1;
		have += (size_t)got;
	}
	return 0;
}

static void *client(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg * 7919u + 1;
	int fd = connect_loopback(port, "mcload");
	char *data = malloc(value + 2), buf[4096], req[128];
	memset(data, 'v', value);
	memcpy(data + value, "\r\n", 2);
	unsigned long long made = 0;
	double stop = now() + seconds;
	while (now() < stop) {
		int key = rand_r(&seed) % keys;
		int n = snprintf(req, sizeof req, "set k%d 0 0 %d\r\n", key, value);
		if (write(fd, req, n) != n || write(fd, data, value + 2) != value + 2 ||
		    reply(fd, buf, sizeof buf, "\r\n") != 0)
			break;
		n = snprintf(req, sizeof req, "get k%d\r\n", rand_r(&seed) % keys);
		if (write(fd, req, n) != n || reply(fd, buf, sizeof buf, "END\r\n") != 0)
			break;
		made += 2;
	}
	__atomic_add_fetch(&requests, made, __ATOMIC_RELAXED);
	close(fd);
	free(data);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: mcload PORT THREADS SECONDS [KEYS] [VALUE]\n");
		return 2;
	}
	port = atoi(argv[1]);
	int threads = atoi(argv[2]);
	seconds = atoi(argv[3]);
	if (argc > 4)
		keys = atoi(argv[4]);
	if (argc > 5)
		value = atoi(argv[5]);
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, client, (void *)(size_t)i);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	printf("mcload: %llu requests\n", requests);
	return 0;
}
