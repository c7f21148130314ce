common/CMakeFiles/osbq_common.dir/semver.c.o: /work/main/common/semver.c \
 /usr/include/stdc-predef.h /work/main/common/semver.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stdbool.h \
 /usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h
