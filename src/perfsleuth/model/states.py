"""Thread states a sample can carry (off-CPU / wall-clock modes); "" = unknown. Apart from
the profile's module (which names them as STATES too) so that every command's --state
choices come without importing it."""

STATES = ("running", "mutex", "condvar", "io", "sleep", "other")

# wall mode's kernel frame for a thread wallsnap stopped runnable in a futex call it had
# completed: a wake done (the woken thread took its CPU) or a wait already woken. Off the
# CPU, as the other modes' stacks through the scheduler say: lotpipe's workers, preempted
# by the producer each notify_one woke, read "24.5% of CPU time is in locking" (gain 12.2%)
# in wall mode, where all mode saw them switched out in __schedule and found nothing.
RUNNABLE_IN_FUTEX = "[runnable in a futex call]"

# wall mode's kernel frame for a thread wallsnap stopped runnable in a read that could not
# wait (a non-blocking socket or pipe: wallsnap's NONBLOCKING): copying, or preempted
# there. memcached's workers' reads after each epoll_wait read `io`, 5-10 points over a
# clock around epoll_wait.
NOT_WAITING_READ = "[reading, not waiting: a non-blocking socket or pipe]"
