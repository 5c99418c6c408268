#ifndef C_GATEHOUSE_ZLIB_H
#define C_GATEHOUSE_ZLIB_H

#include <stddef.h>
#include <stdint.h>

/// zlib's CRC-32 (the gzip trailer's), continued from `crc` over `length` bytes. zlib's own header stays out of the
/// module, so that its declarations never meet compress-nio's copy of them.
uint32_t gatehouse_crc32(uint32_t crc, const uint8_t *bytes, size_t length);

#endif
