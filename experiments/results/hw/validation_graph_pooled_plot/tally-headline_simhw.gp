# Made by tally-plot from the results database; the data is in tally-headline_simhw.dat.
#   gnuplot tally-headline_simhw.gp                   -> tally-headline_simhw.png
#   gnuplot -e 'fmt="svg"' tally-headline_simhw.gp    -> tally-headline_simhw.svg (also "pdf")
# (gnuplot 5.4 has no 'else if': hence the nested blocks)
if (!exists("fmt")) fmt = "png"
if (fmt eq "png") {
    if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
        set terminal pngcairo size 1620,1574 noenhanced font "Sans,10"
    } else {
        set terminal png size 1620,1574 noenhanced
    }
} else { if (fmt eq "svg") {
    set terminal svg size 1620,1574 noenhanced dynamic font "Sans,11"
} else { if (fmt eq "pdf") {
    set terminal pdfcairo size 16.20in,15.74in noenhanced font "Sans,9"
} else {
    print "unknown fmt " . fmt . " (png, svg or pdf)"
    exit status 2
} } }
set output "tally-headline_simhw." . fmt
set encoding utf8

# data: tally-headline_simhw.dat; columns: 1 x, 2 label, 3 sim, 4 hw, 5 error % of sim vs hw
set multiplot layout 2,1 title "tally-headline: simulated vs hardware (mean of 22 runs per policy; labels: sim error vs hw)"
set style fill solid 0.85 border lc rgb "black"
set grid ytics
set key outside right top
set xtics rotate by 45 right nomirror
set lmargin 12
set rmargin 18
set bmargin 29

set logscale y
set yrange [3.19262:45317.1]
set offsets 0, 0, 0, 0
set title "p99 latency of the inference jobs (log scale)"
set ylabel "p99 latency (ms)"
set xrange [-0.6:20.6]
plot "tally-headline_simhw.dat" index 1 using ($1-0.2):3:(0.4):xticlabels(2) with boxes lc rgb "#1f77b4" title "simulated", \
     "" index 1 using ($1+0.2):4:(0.4) with boxes lc rgb "#ff7f0e" title "hardware", \
     "" index 1 using 1:($3>$4?$3:$4):(sprintf("%+.1f%%", $5)) with labels rotate by 90 left offset char 0,0.5 notitle

set logscale y
set yrange [1.61648:5615.05]
set offsets 0, 0, 0, 0
set title "throughput of every job (log scale)"
set ylabel "throughput (requests or iterations / s)"
set xrange [-0.6:39.6]
plot "tally-headline_simhw.dat" index 0 using ($1-0.2):3:(0.4):xticlabels(2) with boxes lc rgb "#1f77b4" title "simulated", \
     "" index 0 using ($1+0.2):4:(0.4) with boxes lc rgb "#ff7f0e" title "hardware", \
     "" index 0 using 1:($3>$4?$3:$4):(sprintf("%+.1f%%", $5)) with labels rotate by 90 left offset char 0,0.5 notitle
unset multiplot
