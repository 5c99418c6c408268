#include "CGatehouseZlib.h"
#include <limits.h>
#include <zlib.h>

uint32_t gatehouse_crc32(uint32_t crc, const uint8_t *bytes, size_t length) {
    uLong value = crc;
    while (length > 0) {
        uInt part = length > UINT_MAX ? UINT_MAX : (uInt)length;
        value = crc32(value, bytes, part);
        bytes += part;
        length -= part;
    }
    return (uint32_t)value;
}
