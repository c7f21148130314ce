# Warning flags every osbq target gets through osbq_target_defaults().
set(OSBQ_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wconversion
    -Wmissing-prototypes -Wvla)
if(OSBQ_WERROR)
  list(APPEND OSBQ_WARNINGS -Werror)
endif()

function(osbq_target_defaults target)
  target_compile_options(${target} PRIVATE ${OSBQ_WARNINGS})
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L _DEFAULT_SOURCE)
  osbq_target_sanitize(${target})
endfunction()
