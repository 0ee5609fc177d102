/* procfile.h - reading a small file of /proc whole, in one read (its files are made when
 * read: one read gets a consistent line); for the watcher's look at a blocked call and the
 * start's look at which cores other processes run on. */
#ifndef KR_BASE_PROCFILE_H
#define KR_BASE_PROCFILE_H

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

/* Up to cap - 1 bytes of `path` into buf, NUL-terminated (empty if it cannot be read);
 * the bytes read, or -1. */
static inline ssize_t kr__read_proc(const char *path, char *buf, size_t cap)
{
    buf[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n > 0) buf[n] = 0;
    return n;
}

#endif
