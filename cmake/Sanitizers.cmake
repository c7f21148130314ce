# AddressSanitizer + UndefinedBehaviorSanitizer for Debug builds (OSBQ_SANITIZE).
function(osbq_target_sanitize target)
  if(NOT OSBQ_SANITIZE)
    return()
  endif()
  string(REPLACE ";" "," _list "${OSBQ_SANITIZE}")
  target_compile_options(${target} PRIVATE -fsanitize=${_list} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(${target} PRIVATE -fsanitize=${_list})
endfunction()
