/* Content digests of the files a run reads (its traces and arrival files),
 * and the record of them each run keeps in the results database
 * (runs.inputs). A run's key names its traces by path only, and keys must
 * stay as they are (databases, the hardware's included, are matched by
 * them), so a sweep resuming into a database compares these records instead:
 * a trace edited or captured again at the same path is told from the one the
 * stored runs read, and their results are not silently reused. */
#ifndef TALLY_DIGEST_H
#define TALLY_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* zlib's CRC-32 of the bytes, with their count. Not a 64-bit FNV hash like
 * the run key's: byte by byte that takes ~1.7 ns a byte, ~15% more time to
 * load the bundled traces (102 MB gunzipped); zlib's crc32 runs at ~4 GB/s
 * and adds 3% (experiments/results/bench.md). 32 bits and the length tell an
 * edited or re-captured file from the old one but for a 1 in 4e9 chance: the
 * digest guards against mistakes, not against an adversary. Of the decoded
 * bytes for a gzipped trace: gzipped again, at another level or under
 * another name, it is the same trace. */
typedef struct tl_digest {
    uint32_t crc;
    uint64_t bytes;
} tl_digest;

/* "crc32:0902e4d9:104857600" and its NUL fit. */
#define TL_DIGEST_TEXT 40

void tl_digest_init(tl_digest *d);
void tl_digest_add(tl_digest *d, const void *p, size_t n);
void tl_digest_text(const tl_digest *d, char out[TL_DIGEST_TEXT]);

/* What one job of a run read: its trace, and its arrival file (NULL: none). */
typedef struct tl_job_inputs {
    const tl_digest *trace, *arrivals;
} tl_job_inputs;

/* The runs.inputs text of a run of n jobs: a JSON array, one object per job
 * in the run's order, {"trace": DIGEST} and "arrivals": DIGEST where the job
 * reads a file of them. malloc'ed. */
char *tl_inputs_record(const tl_job_inputs *jobs, int n);

enum { TL_INPUTS_SAME = 0, TL_INPUTS_CHANGED = 1, TL_INPUTS_UNRECORDED = 2 };
/* recorded (runs.inputs; NULL for a run written before they were) against
 * what the n jobs read now. TL_INPUTS_CHANGED: job *job's trace (*arrivals
 * false) or arrival file (true) differs, its recorded digest in was.
 * TL_INPUTS_UNRECORDED: nothing to compare (NULL, not our record, or digests
 * of another kind than tl_digest_text's). */
int tl_inputs_compare(const char *recorded, const tl_job_inputs *jobs, int n, int *job,
                      bool *arrivals, char was[TL_DIGEST_TEXT]);

#endif
