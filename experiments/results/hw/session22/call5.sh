#!/bin/sh
# Session 22's fifth device run (build/lcb carries a prebuilt tests/test_tracer with the
# CMocka, jansson and SQLite libraries the device lacks): the tracer after lite.c,
# lite_sample.c and hostcalls.c became translation units of their own: built on the
# device, then every test of tests/test_tracer.c, the GPU ones included.
# One archive comes back: call5.tar.xz.
out=${1:?usage: call5.sh OUTDIR}
w=/tmp/call5; mkdir -p $w
make -f cuda.mk tracer BUILD=build/device > $w/tracer_build.log 2>&1; echo "tracer build rc=$?"
LD_LIBRARY_PATH=$PWD/build/lcb TALLY_BUILD=build/device build/lcb/test_tracer > $w/tests_tracer.txt 2>&1
echo "test_tracer rc=$?"; tail -4 $w/tests_tracer.txt
cd $w && tar cJf $out/call5.tar.xz . && ls -la $out
