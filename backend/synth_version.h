/* Version of the synthetic kernels' code: part of every calibration key, so
 * that changing the kernels invalidates cached calibrations. */
#ifndef TALLY_BACKEND_SYNTH_VERSION_H
#define TALLY_BACKEND_SYNTH_VERSION_H
#define TL_SYNTH_VERSION 2
#endif
