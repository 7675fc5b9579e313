# Embedding a build product (a fatbin, a code-object bundle, kernel source)
# in the library as a C array, without xxd or any tool beyond CMake.
#
# lkv_embed(<out.c> <symbol> <input> [TEXT])
#   writes, at build time, <out.c> defining
#     const unsigned char <symbol>[];      16-byte aligned, as module loaders want
#     const size_t <symbol>_size;          the input's size in bytes
#   TEXT appends a NUL (not counted in _size), for source handed to a compiler.
#
# Run as a script (cmake -DIN=.. -DOUT=.. -DSYMBOL=.. [-DTEXT=1] -P embed.cmake)
# it does the conversion itself.

if(CMAKE_SCRIPT_MODE_FILE)
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR size "${hex_len} / 2")
  if(TEXT)
    string(APPEND hex "00")
  endif()
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # 16 bytes per line keeps the generated file readable in a diff tool
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
  get_filename_component(in_name "${IN}" NAME)
  file(WRITE "${OUT}.tmp"
    "/* Generated from ${in_name} by cmake/embed.cmake; do not edit. */\n"
    "#include <stddef.h>\n"
    "_Alignas(16) const unsigned char ${SYMBOL}[] = {\n    ${bytes}\n};\n"
    "const size_t ${SYMBOL}_size = ${size};\n")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

set(LKV_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_FILE})

function(lkv_embed out symbol input)
  set(text_flag "")
  if(ARGN STREQUAL "TEXT")
    set(text_flag -DTEXT=1)
  endif()
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${input} -DOUT=${out} -DSYMBOL=${symbol} ${text_flag}
            -P ${LKV_EMBED_SCRIPT}
    DEPENDS ${input} ${LKV_EMBED_SCRIPT}
    COMMENT "Embedding ${symbol}"
    VERBATIM)
endfunction()
