/*
 * The cost of waking up every 10 ms and doing nothing, on this machine: the
 * floor under any 10 ms sampler (bench/sampling.sh cpu compares with it).
 *
 *   cc -O2 -o /tmp/wakeup_floor bench/wakeup_floor.c && /tmp/wakeup_floor
 */
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>

int
main(void)
{
	int			ep = epoll_create1(0);
	struct epoll_event ev;
	struct timespec t;
	unsigned long long ns = 0;
	FILE	   *f;

	/* What WaitLatch() does per tick: epoll_wait with a timeout, a clock read. */
	for (int i = 0; i < 1500; i++)
	{
		epoll_wait(ep, &ev, 1, 10);
		clock_gettime(CLOCK_MONOTONIC, &t);
	}
	f = fopen("/proc/self/schedstat", "r");
	if (f == NULL || fscanf(f, "%llu", &ns) != 1)
		return 1;
	printf("%.1f us per wakeup, %.3f%% of a core at 10 ms\n",
		   ns / 1500.0 / 1000, ns / 1500.0 / 1e7 * 100);
	return 0;
}
