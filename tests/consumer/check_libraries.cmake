# Fails when EXE loads SQLite, zlib, ncurses or terminfo (ldd lists every library it loads,
# also those that ember's own shared libraries would pull in).
execute_process(COMMAND ldd ${EXE} OUTPUT_VARIABLE libs COMMAND_ERROR_IS_FATAL ANY)
message("${libs}")
if(libs MATCHES "(libsqlite3|libz\\.|libncurses|libtinfo|libform)[^ ]*")
  message(FATAL_ERROR "${EXE} loads ${CMAKE_MATCH_0}")
endif()
