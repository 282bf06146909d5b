/* A tiny tl_device for unit tests of the runner and of policy logic: every
 * stream runs its work one item at a time for exactly the op's dur_ns; streams
 * never slow each other (an infinitely wide GPU). Deterministic. */
#ifndef TALLY_TEST_FAKE_DEVICE_H
#define TALLY_TEST_FAKE_DEVICE_H

#include "tally/device.h"

int tl_fake_device_open(tl_device *d, const tl_gpu_props *gpu);
/* From now on every launch and copy reaches the GPU lag ns after its call (as
 * a graph job's ops on the CUDA backend reach it at their graph's launch, after
 * the host has issued them all): tl_launch_result.submitted_ns is the call's
 * time plus lag, and the op starts no earlier. Default 0. */
void tl_fake_device_set_submit_lag(tl_device *d, tl_ns lag);

#endif
