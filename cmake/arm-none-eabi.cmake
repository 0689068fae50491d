# Toolchain file of the freestanding build (ember::micro, docs/embedded.md): arm-none-eabi-g++
# with picolibc, no exceptions, no RTTI, semihosting for output, for one board:
#   cmake -S . -B build-micro -DCMAKE_TOOLCHAIN_FILE=cmake/arm-none-eabi.cmake \
#         -DEMBER_MICRO_BOARD=lm3s6965evb          # or mps2-an386 (the default), mps2-an385
# or `cmake --preset micro-m4f` / `micro-m3`. Debian: gcc-arm-none-eabi,
# picolibc-arm-none-eabi, libstdc++-arm-none-eabi-picolibc, qemu-system-arm (scripts/setup.sh).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(EMBER_FREESTANDING ON CACHE BOOL "A freestanding build: ember::micro and its examples only")

set(EMBER_MICRO_BOARD "mps2-an386" CACHE STRING "The QEMU board: mps2-an386, mps2-an385 or lm3s6965evb")
# Each board: its CPU flags, and its flash and RAM (origin and size) for picolibc's linker script.
if(EMBER_MICRO_BOARD STREQUAL "mps2-an386")      # Cortex-M4F
  set(_cpu "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
  set(_mem 0x0 0x400000 0x20000000 0x400000)
elseif(EMBER_MICRO_BOARD STREQUAL "mps2-an385")  # Cortex-M3, soft float
  set(_cpu "-mcpu=cortex-m3 -mthumb")
  set(_mem 0x0 0x400000 0x20000000 0x400000)
elseif(EMBER_MICRO_BOARD STREQUAL "lm3s6965evb") # Cortex-M3, soft float, 256 KB flash, 64 KB RAM
  set(_cpu "-mcpu=cortex-m3 -mthumb")
  set(_mem 0x0 0x40000 0x20000000 0x10000)
else()
  message(FATAL_ERROR "EMBER_MICRO_BOARD: unknown board '${EMBER_MICRO_BOARD}'")
endif()
list(GET _mem 0 _flash)
list(GET _mem 1 _flash_size)
list(GET _mem 2 _ram)
list(GET _mem 3 _ram_size)
set(EMBER_MICRO_FLASH_BYTES ${_flash_size})
set(EMBER_MICRO_RAM_BYTES ${_ram_size})

# printf without floats (the examples print floats as their bits): a smaller image.
set(_printf "-DPICOLIBC_INTEGER_PRINTF_SCANF")
set(CMAKE_C_FLAGS_INIT "--specs=picolibc.specs ${_cpu} ${_printf} -ffunction-sections -fdata-sections")
set(CMAKE_CXX_FLAGS_INIT "--specs=picolibcpp.specs ${_cpu} ${_printf} -ffunction-sections -fdata-sections \
-fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-use-cxa-atexit")
# The hosted crt0 calls exit() after main, which semihosting turns into QEMU's exit status.
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_printf} --oslib=semihost --crt0=hosted -Wl,--gc-sections \
-Wl,--defsym=__flash=${_flash} -Wl,--defsym=__flash_size=${_flash_size} \
-Wl,--defsym=__ram=${_ram} -Wl,--defsym=__ram_size=${_ram_size}")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
