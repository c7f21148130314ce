file(REMOVE_RECURSE
  "CMakeFiles/osbq_proto.dir/job.c.o"
  "CMakeFiles/osbq_proto.dir/job.c.o.d"
  "libosbq_proto.a"
  "libosbq_proto.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq_proto.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
