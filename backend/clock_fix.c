/* GPU clock offset correction (see backend.h). No GPU needed: cuda_complete.c
 * calls it for every batch of completions, tests/test_backend.c checks it. */
#include "backend.h"

tl_ns tl_clock_offset_move(const tl_clock_sample *k, int n, tl_ns offset, tl_ns seen)
{
    tl_ns excess = 0, shortfall = 0;
    for (int i = 0; i < n; i++) {
        if (!k[i].end_gt)
            continue;
        tl_ns over = (tl_ns)k[i].end_gt - offset - seen;
        if (over > excess && over <= TL_NS_PER_MS)
            excess = over;
        if (!k[i].start_gt || k[i].submitted_ns <= 0)
            continue;
        tl_ns under = k[i].submitted_ns - ((tl_ns)k[i].start_gt - offset);
        if (under > shortfall && under <= TL_NS_PER_MS)
            shortfall = under;
    }
    return excess > 0 ? excess : -shortfall;
}
