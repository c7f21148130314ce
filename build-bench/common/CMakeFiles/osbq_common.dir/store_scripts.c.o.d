common/CMakeFiles/osbq_common.dir/store_scripts.c.o: \
 /work/main/build-bench/common/store_scripts.c /usr/include/stdc-predef.h \
 /work/main/common/store_scripts.h
