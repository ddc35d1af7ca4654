# SPDX-License-Identifier: MIT
# bench/plot.gp - medians per operation and backend, alone and with a
# reader thread; log scale. Invoked by `make bench-plot` with dir and out.
load dir.'/plot.vars'
set terminal pngcairo noenhanced size 1400,1000 font "sans,10"
set output out
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y
set format y "%g"
set ylabel "median per operation (microseconds, log scale)"
set xtics rotate by -20 scale 0
set grid ytics
set key top left
set yrange [0.05:*]
set multiplot layout 2,1
set title "alone"
plot for [i=2:nb+1] dir.'/plot.dat' using i:xtic(1) title columnheader(i)
set title "with another thread reading protected data"
plot for [i=nb+2:2*nb+1] dir.'/plot.dat' using i:xtic(1) title columnheader(i)
unset multiplot
