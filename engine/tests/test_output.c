/* Unit tests of output.c, the one way the engine opens --out, --status and
 * --samples: in a private temporary directory, a planted symbolic link, a FIFO, a
 * directory and a device node (mknod, as root) are refused and left as they were
 * (no byte written, nothing created beside them); a regular file is replaced by a
 * rename (another link to it keeps its content; WHOLE: the name holds the old file
 * until the close); "-", /dev/stdout, /dev/stderr and /proc/self/fd/N are the
 * stream, written through a duplicate, the name untouched. Nothing under /dev is
 * created or replaced: /dev/stdout is only opened after rtg_output_stream_fd says
 * it is a stream, and its lstat (and /dev/full's) is the same after the test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "output.h"

/* How many entries the current directory holds besides . and .. */
static int entries(void)
{
    DIR *d = opendir(".");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot create %s: %s", path, strerror(errno));
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The file's content (at most 255 bytes), "" when it cannot be read. */
static const char *content(const char *path)
{
    static char buf[256];
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return buf;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
    return buf;
}

/* Open path by mode: refused with a reason holding `words`, the name the same kind
 * (and the same inode) after, and no file added to the directory. */
static void refused(const char *path, rtg_output_mode mode, const char *words)
{
    struct stat before, after;
    CHECK(lstat(path, &before) == 0, "%s: %s", path, strerror(errno));
    int n = entries();
    rtg_output o;
    char why[256] = "";
    int rc = rtg_output_open(&o, path, mode, why, sizeof why);
    CHECK(rc == -1, "%s (mode %d) was opened, not refused", path, (int)mode);
    if (rc == 0) {
        fputs("planted", o.f);
        rtg_output_close(&o, true, NULL, 0);
    }
    CHECK(strstr(why, words) != NULL, "%s: the reason \"%s\" does not say \"%s\"", path, why, words);
    CHECK(o.f == NULL, "%s: a refused open left a stream", path);
    CHECK(lstat(path, &after) == 0, "%s is gone: %s", path, strerror(errno));
    CHECK((before.st_mode & S_IFMT) == (after.st_mode & S_IFMT) && before.st_ino == after.st_ino,
          "%s was replaced (mode %o -> %o)", path, (unsigned)before.st_mode, (unsigned)after.st_mode);
    CHECK_EQ_I(entries(), n);
}

static void planted_names_are_refused(void)
{
    put("victim", "untouched");
    CHECK(symlink("victim", "link") == 0, "symlink: %s", strerror(errno));
    CHECK(symlink("nowhere", "dangling") == 0, "symlink: %s", strerror(errno));
    CHECK(mkfifo("fifo", 0600) == 0, "mkfifo: %s", strerror(errno));
    CHECK(mkdir("dir", 0700) == 0, "mkdir: %s", strerror(errno));
    for (int m = 0; m < 2; m++) {
        rtg_output_mode mode = m ? RTG_OUTPUT_GROWING : RTG_OUTPUT_WHOLE;
        refused("link", mode, "symbolic link");
        refused("dangling", mode, "symbolic link");
        refused("fifo", mode, "FIFO");
        refused("dir", mode, "directory");
        refused("dir/", mode, "directory");
    }
    CHECK(strcmp(content("victim"), "untouched") == 0, "the link's target was written: \"%s\"",
          content("victim"));
    CHECK(access("nowhere", F_OK) != 0, "the dangling link's target was created");

    /* a device node of this directory: the null device's numbers, never one under /dev */
    if (mknod("null", S_IFCHR | 0600, makedev(1, 3)) != 0) {
        printf("device node not checked: mknod needs CAP_MKNOD (%s)\n", strerror(errno));
        return;
    }
    struct stat st;
    for (int m = 0; m < 2; m++)
        refused("null", m ? RTG_OUTPUT_GROWING : RTG_OUTPUT_WHOLE, "device");
    CHECK(lstat("null", &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
          "the device node is not the device it was");
}

/* A regular file is replaced by a rename: a new inode under the name, the old
 * content kept by another link to it. WHOLE: the name holds the old file until the
 * close, and a close without keep leaves it. */
static void regular_file_is_replaced_by_rename(void)
{
    struct stat old, now;
    char why[256];
    rtg_output o;

    put("whole", "old");
    CHECK(link("whole", "whole.other") == 0, "link: %s", strerror(errno));
    lstat("whole", &old);
    int n = entries();
    CHECK(rtg_output_open(&o, "whole", RTG_OUTPUT_WHOLE, why, sizeof why) == 0, "whole: %s", why);
    fputs("new", o.f);
    fflush(o.f);
    CHECK(strcmp(content("whole"), "old") == 0, "WHOLE wrote in place before the close");
    CHECK(rtg_output_close(&o, true, why, sizeof why) == 0, "close: %s", why);
    lstat("whole", &now);
    CHECK(strcmp(content("whole"), "new") == 0, "whole holds \"%s\"", content("whole"));
    CHECK(now.st_ino != old.st_ino, "whole was written in place, not renamed over");
    CHECK(strcmp(content("whole.other"), "old") == 0, "the other link was truncated");
    CHECK_EQ_I(entries(), n);                      /* the temporary name is gone */

    CHECK(rtg_output_open(&o, "whole", RTG_OUTPUT_WHOLE, why, sizeof why) == 0, "whole: %s", why);
    fputs("discarded", o.f);
    CHECK(rtg_output_close(&o, false, why, sizeof why) == 0, "close: %s", why);
    CHECK(strcmp(content("whole"), "new") == 0, "a close without keep replaced the file");
    CHECK_EQ_I(entries(), n);

    put("growing", "old");
    CHECK(link("growing", "growing.other") == 0, "link: %s", strerror(errno));
    lstat("growing", &old);
    CHECK(rtg_output_open(&o, "growing", RTG_OUTPUT_GROWING, why, sizeof why) == 0, "growing: %s", why);
    lstat("growing", &now);
    CHECK(now.st_ino != old.st_ino && now.st_size == 0, "GROWING: the name is not the new file at once");
    fputs("line\n", o.f);
    CHECK(rtg_output_close(&o, true, why, sizeof why) == 0, "close: %s", why);
    CHECK(strcmp(content("growing"), "line\n") == 0, "growing holds \"%s\"", content("growing"));
    CHECK(strcmp(content("growing.other"), "old") == 0, "the other link was truncated");

    /* a symbolic link planted over the name while the run went on: the close refuses */
    put("victim2", "untouched");
    CHECK(rtg_output_open(&o, "late", RTG_OUTPUT_WHOLE, why, sizeof why) == 0, "late: %s", why);
    fputs("result", o.f);
    CHECK(symlink("victim2", "late") == 0, "symlink: %s", strerror(errno));
    CHECK(rtg_output_close(&o, true, why, sizeof why) == -1, "the close renamed over a planted link");
    CHECK(strstr(why, "symbolic link") != NULL, "the reason \"%s\"", why);
    struct stat l;
    CHECK(lstat("late", &l) == 0 && S_ISLNK(l.st_mode), "late is no longer the planted link");
    CHECK(strcmp(content("victim2"), "untouched") == 0, "the planted link's target was written");
}

/* Write text to name (a stream) with fd 1 or 2 sent to a file of this directory;
 * the file's content after. */
static const char *through_stream(const char *name, int fd, const char *text)
{
    static char got[256];
    got[0] = '\0';
    fflush(NULL);
    int saved = dup(fd);
    int file = open("captured", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && file >= 0, "cannot redirect fd %d", fd);
    if (saved < 0 || file < 0)
        return got;
    dup2(file, fd);
    close(file);
    rtg_output o;
    char why[256] = "";
    int rc = rtg_output_open(&o, name, RTG_OUTPUT_WHOLE, why, sizeof why);
    if (rc == 0) {
        CHECK(o.path == NULL && o.tmp == NULL, "%s: a stream got a file name", name);
        fputs(text, o.f);
        rc = rtg_output_close(&o, true, why, sizeof why);
    }
    dup2(saved, fd);
    close(saved);
    CHECK(rc == 0, "%s: %s", name, why);
    snprintf(got, sizeof got, "%s", content("captured"));
    unlink("captured");
    return got;
}

static void streams_are_written_not_replaced(void)
{
    CHECK_EQ_I(rtg_output_stream_fd("-"), 1);
    CHECK_EQ_I(rtg_output_stream_fd("/dev/stdout"), 1);
    CHECK_EQ_I(rtg_output_stream_fd("/dev/stderr"), 2);
    CHECK_EQ_I(rtg_output_stream_fd("/proc/self/fd/5"), 5);
    CHECK_EQ_I(rtg_output_stream_fd("/dev/fd/7"), 7);
    CHECK_EQ_I(rtg_output_stream_fd("/proc/self/fd/"), -1);
    CHECK_EQ_I(rtg_output_stream_fd("/dev/fd/1x"), -1);
    CHECK_EQ_I(rtg_output_stream_fd("/proc/self/fd/99999999"), -1);
    CHECK_EQ_I(rtg_output_stream_fd("./-"), -1);

    struct stat out0, err0, full0, out1, err1, full1;
    int have_out = lstat("/dev/stdout", &out0) == 0, have_err = lstat("/dev/stderr", &err0) == 0;
    int have_full = lstat("/dev/full", &full0) == 0;
    int n = entries();

    CHECK(strcmp(through_stream("-", 1, "dash"), "dash") == 0, "\"-\" did not write fd 1");
    CHECK(access("-", F_OK) != 0, "a file named - was created");
    /* only a name the module calls a stream is opened: a broken module must not get
     * the chance to rename a file over /dev/stdout */
    if (rtg_output_stream_fd("/dev/stdout") == 1)
        CHECK(strcmp(through_stream("/dev/stdout", 1, "out"), "out") == 0, "/dev/stdout did not write fd 1");
    if (rtg_output_stream_fd("/dev/stderr") == 2)
        CHECK(strcmp(through_stream("/dev/stderr", 2, "err"), "err") == 0, "/dev/stderr did not write fd 2");
    int extra = open("extra", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", extra);
    rtg_output o;
    char why[256] = "";
    if (rtg_output_stream_fd(name) == extra && rtg_output_open(&o, name, RTG_OUTPUT_GROWING, why, sizeof why) == 0) {
        fputs("fd", o.f);
        CHECK(rtg_output_close(&o, true, why, sizeof why) == 0, "%s: %s", name, why);
    }
    close(extra);
    CHECK(strcmp(content("extra"), "fd") == 0, "%s did not write its descriptor: \"%s\"", name, content("extra"));
    unlink("extra");
    CHECK(rtg_output_open(&o, "/proc/self/fd/999", RTG_OUTPUT_WHOLE, why, sizeof why) == -1,
          "a closed descriptor was opened");
    CHECK(strstr(why, "not open") != NULL, "the reason \"%s\"", why);
    CHECK_EQ_I(entries(), n);

    if (have_out)
        CHECK(lstat("/dev/stdout", &out1) == 0 && out1.st_ino == out0.st_ino && out1.st_mode == out0.st_mode,
              "/dev/stdout changed");
    if (have_err)
        CHECK(lstat("/dev/stderr", &err1) == 0 && err1.st_ino == err0.st_ino && err1.st_mode == err0.st_mode,
              "/dev/stderr changed");
    if (have_full)
        CHECK(lstat("/dev/full", &full1) == 0 && S_ISCHR(full1.st_mode) && full1.st_rdev == full0.st_rdev,
              "/dev/full changed");
}

static int remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char child[4096];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d)
            closedir(d);
        return rmdir(path);
    }
    return unlink(path);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/rtgauge-test-output-XXXXXX", base && *base ? base : "/tmp");
    char cwd[4096];
    if (!mkdtemp(dir) || !getcwd(cwd, sizeof cwd) || chdir(dir) != 0) {
        fprintf(stderr, "no temporary directory: %s\n", strerror(errno));
        return 1;
    }
    planted_names_are_refused();
    regular_file_is_replaced_by_rename();
    streams_are_written_not_replaced();
    if (chdir(cwd) != 0 || remove_tree(dir) != 0)
        fprintf(stderr, "left %s\n", dir);
    return check_done();
}
