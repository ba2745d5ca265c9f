# Writes OUT (govd_commit.h) with the git commit of SRC, "-dirty" when tracked
# files differ from it; rewritten only when the text changes so an unchanged
# tree rebuilds nothing. govctl report prints it in every report's header.
execute_process(COMMAND git -C "${SRC}" rev-parse HEAD OUTPUT_VARIABLE c
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT rc EQUAL 0 OR c STREQUAL "")
  set(c "unknown (not built from a git checkout)")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no
                  OUTPUT_VARIABLE dirty RESULT_VARIABLE rc2 ERROR_QUIET)
  if(rc2 EQUAL 0 AND NOT dirty STREQUAL "")
    set(c "${c}-dirty")
  endif()
endif()
set(text "#define GOVD_SOURCE_COMMIT \"${c}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
