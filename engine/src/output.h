/* output: the one way the engine opens a file it writes (--out, --status,
 * --samples), by the rule rtgauge's own files follow (rtgauge/safefile.py,
 * docs/engine.md "Files the engine writes"):
 *
 *  - "-", /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N name a stream
 *    already open: the engine writes to a duplicate of that descriptor and
 *    creates, replaces or removes nothing (/dev/stdout stays the link it is).
 *  - Any other name must be absent or a regular file. A symbolic link, a
 *    directory, a device, a FIFO or a socket there is refused with one sentence
 *    (lstat first, so a device is never opened; the file the engine creates is
 *    O_CREAT|O_EXCL|O_NOFOLLOW and checked with fstat before a byte is written).
 *  - The engine writes a new temporary file beside the name (".NAME.PID.N.tmp")
 *    and renames it over the name. RTG_OUTPUT_WHOLE (--out, written once at the
 *    end): the rename comes when the file is complete, so a reader sees the
 *    previous file or the whole new one; a run that fails to write it leaves the
 *    previous one. RTG_OUTPUT_GROWING (--status, --samples, written as the run
 *    goes, followed by a reader): the rename comes at once, when the file is
 *    still empty, so the name holds the new file from the start of the run and
 *    grows; a previous file is replaced, never truncated in place (another link
 *    to it keeps its content), and a run that dies leaves what was written.
 *
 * POSIX-only build: the same (O_NOFOLLOW, O_CLOEXEC and rename are POSIX). */
#ifndef RTG_OUTPUT_H
#define RTG_OUTPUT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { RTG_OUTPUT_WHOLE, RTG_OUTPUT_GROWING } rtg_output_mode;

typedef struct {
    FILE *f;          /* write here; NULL when the open was refused */
    char *path;       /* the name (NULL for a stream) */
    char *tmp;        /* the temporary name until it is renamed (WHOLE only) */
} rtg_output;

/* The descriptor a name means when it names an open stream, else -1. */
int rtg_output_stream_fd(const char *path);

/* Open path for writing by the rule above. 0, or -1 with the reason as a clause
 * in why ("it is a symbolic link, which the engine does not write through").
 * Nothing is created when it is refused. */
int rtg_output_open(rtg_output *o, const char *path, rtg_output_mode mode, char *why, size_t whylen);

/* Flush and close; a WHOLE file is renamed over its name when keep is true and
 * every write succeeded, else removed (the previous file left). 0, or -1 with
 * the reason in why. */
int rtg_output_close(rtg_output *o, bool keep, char *why, size_t whylen);

#endif
