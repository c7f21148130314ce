file(REMOVE_RECURSE
  "../bin/osbq-gateway"
  "../bin/osbq-gateway.pdb"
  "CMakeFiles/osbq-gateway.dir/main.c.o"
  "CMakeFiles/osbq-gateway.dir/main.c.o.d"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/osbq-gateway.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
