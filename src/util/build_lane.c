// SPDX-License-Identifier: GPL-2.0
/*
 * build_lane.c - one lane for the working memory of big builds (see
 * build_lane.h).
 */
#include <pthread.h>
#include <sys/stat.h>

#include "counters/counters.h"
#include "util/build_lane.h"

COUNTER_DEFINE(build_lane_waits, COUNTER_STAT,
	       "builds of big files a worker held back until another's ended (--memory-limit's base holds one)");
COUNTER_DEFINE(build_lane_overlaps, COUNTER_STAT,
	       "builds of big files on a thread that may not wait, run beside another");

static pthread_mutex_t lane_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lane_free = PTHREAD_COND_INITIALIZER;
static unsigned int in_lane;		/* threads in the lane */
static __thread unsigned int depth;	/* this thread's nested entries */
static __thread bool may_wait;

void build_lane_may_wait(void)
{
	may_wait = true;
}

bool build_lane_enter(uint64_t file_bytes)
{
	if (depth) {
		depth++;
		return true;
	}
	if (file_bytes < BUILD_LANE_FROM)
		return false;
	pthread_mutex_lock(&lane_lock);
	if (in_lane && may_wait) {
		counter_inc(&counter_build_lane_waits);
		while (in_lane)
			pthread_cond_wait(&lane_free, &lane_lock);
	} else if (in_lane) {
		counter_inc(&counter_build_lane_overlaps);
	}
	in_lane++;
	pthread_mutex_unlock(&lane_lock);
	depth = 1;
	return true;
}

void build_lane_leave(bool entered)
{
	if (!entered || --depth)
		return;
	pthread_mutex_lock(&lane_lock);
	in_lane--;
	pthread_cond_broadcast(&lane_free);
	pthread_mutex_unlock(&lane_lock);
}

bool build_lane_enter_fd(int fd)
{
	struct stat st;

	return build_lane_enter(fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) ?
				(uint64_t)st.st_size : 0);
}
