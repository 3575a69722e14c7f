/* output: the one way the engine opens a file it writes (output.h). */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rtg_output_stream_fd(const char *path)
{
    if (strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    const char *digits = NULL;
    if (strncmp(path, "/proc/self/fd/", 14) == 0)
        digits = path + 14;
    else if (strncmp(path, "/dev/fd/", 8) == 0)
        digits = path + 8;
    if (!digits || !*digits || strlen(digits) > 7)
        return -1;
    for (const char *c = digits; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    return atoi(digits);
}

/* Why a file of this mode is refused, or NULL for a regular file. */
static const char *refusal(mode_t m)
{
    if (S_ISREG(m))
        return NULL;
    if (S_ISLNK(m))
        return "it is a symbolic link, which the engine does not write through";
    if (S_ISDIR(m))
        return "it is a directory";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "it is a device, not a regular file";
    if (S_ISFIFO(m))
        return "it is a FIFO, not a regular file";
    return "it is not a regular file";
}

/* 0 when path is absent or a regular file; else -1 with the reason. */
static int check_name(const char *path, char *why, size_t whylen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    const char *no = refusal(st.st_mode);
    if (no) {
        snprintf(why, whylen, "%s", no);
        return -1;
    }
    return 0;
}

static int open_stream(rtg_output *o, int fd, char *why, size_t whylen)
{
    int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (d < 0) {
        snprintf(why, whylen, "descriptor %d is not open (%s)", fd, strerror(errno));
        return -1;
    }
    o->f = fdopen(d, "w");
    if (!o->f) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(d);
        return -1;
    }
    return 0;
}

int rtg_output_open(rtg_output *o, const char *path, rtg_output_mode mode, char *why, size_t whylen)
{
    memset(o, 0, sizeof *o);
    int fd = rtg_output_stream_fd(path);
    if (fd >= 0)
        return open_stream(o, fd, why, whylen);
    if (!*path) {
        snprintf(why, whylen, "the name is empty");
        return -1;
    }
    if (check_name(path, why, whylen) != 0)
        return -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base) {
        snprintf(why, whylen, "it names a directory");
        return -1;
    }
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;   /* with its '/' */
    size_t need = dirlen + strlen(base) + 64;
    char *tmp = malloc(need);
    o->path = strdup(path);
    if (!tmp || !o->path) {
        free(tmp);
        free(o->path);
        o->path = NULL;
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    int tfd = -1;
    for (int n = 0; n < 100 && tfd < 0; n++) {
        snprintf(tmp, need, "%.*s.%.200s.%ld.%d.tmp", (int)dirlen, path, base, (long)getpid(), n);
        tfd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (tfd < 0 && errno != EEXIST)
            break;
    }
    struct stat st;
    if (tfd < 0 || fstat(tfd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s", tfd < 0 && errno == EEXIST ? "no temporary name beside it is free"
                                                               : strerror(errno));
        if (tfd >= 0) {
            close(tfd);
            unlink(tmp);
        }
        free(tmp);
        free(o->path);
        o->path = NULL;
        return -1;
    }
    if (mode == RTG_OUTPUT_GROWING) {
        /* in place from the start: refused if something was planted meanwhile */
        int bad = check_name(path, why, whylen);
        if (bad == 0 && rename(tmp, path) != 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            bad = -1;
        }
        if (bad != 0) {
            close(tfd);
            unlink(tmp);
            free(tmp);
            free(o->path);
            o->path = NULL;
            return -1;
        }
        free(tmp);
        tmp = NULL;
    }
    o->tmp = tmp;
    o->f = fdopen(tfd, "w");
    if (!o->f) {
        snprintf(why, whylen, "%s", strerror(errno));
        close(tfd);
        if (tmp)
            unlink(tmp);
        free(tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
        return -1;
    }
    return 0;
}

int rtg_output_close(rtg_output *o, bool keep, char *why, size_t whylen)
{
    int rc = 0;
    char local[256];
    if (!why || !whylen) {
        why = local;
        whylen = sizeof local;
    }
    why[0] = '\0';
    if (o->f) {
        bool bad = fflush(o->f) != 0 || ferror(o->f);
        int err = errno;
        if (o->tmp && !bad && fsync(fileno(o->f)) != 0) {
            bad = true;
            err = errno;
        }
        if (fclose(o->f) != 0 && !bad) {
            bad = true;
            err = errno;
        }
        if (bad) {
            rc = -1;
            snprintf(why, whylen, "%s", strerror(err));
        }
    }
    if (o->tmp) {
        if (rc == 0 && keep) {
            if (check_name(o->path, why, whylen) != 0)   /* planted while the run went on */
                rc = -1;
            else if (rename(o->tmp, o->path) != 0) {
                rc = -1;
                snprintf(why, whylen, "%s", strerror(errno));
            }
        }
        if (rc != 0 || !keep)
            unlink(o->tmp);
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return rc;
}
