/* A tiny tl_device for unit tests of the runner and of policy logic: every
 * stream runs its work one item at a time for exactly the op's dur_ns; streams
 * never slow each other (an infinitely wide GPU). Deterministic. */
#ifndef TALLY_TEST_FAKE_DEVICE_H
#define TALLY_TEST_FAKE_DEVICE_H

#include "tally/device.h"

int tl_fake_device_open(tl_device *d, const tl_gpu_props *gpu);

#endif
