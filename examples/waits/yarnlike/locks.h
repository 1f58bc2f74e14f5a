/* A lock wrapper in the manner of pigz's yarn.c: every mutex and condition variable
 * call of the program goes through these functions (compiled apart, so never inlined
 * into their callers). */
#ifndef LOCKS_H
#define LOCKS_H

typedef struct lock_s lock;
enum twist_op { TO, BY };
enum wait_op { TO_BE, NOT_TO_BE, TO_BE_MORE_THAN, TO_BE_LESS_THAN };

lock *new_lock_(long initial, char const *file, long line);
void possess_(lock *bolt, char const *file, long line);
void release_(lock *bolt, char const *file, long line);
void twist_(lock *bolt, enum twist_op op, long val, char const *file, long line);
void wait_for_(lock *bolt, enum wait_op op, long val, char const *file, long line);

#define new_lock(a) new_lock_(a, __FILE__, __LINE__)
#define possess(a) possess_(a, __FILE__, __LINE__)
#define release(a) release_(a, __FILE__, __LINE__)
#define twist(a, b, c) twist_(a, b, c, __FILE__, __LINE__)
#define wait_for(a, b, c) wait_for_(a, b, c, __FILE__, __LINE__)

#endif
