/*
 * dtype.c - element types: size in bytes and safetensors name.
 */
#include <string.h>

#include "internal.h"

static const struct {
	const char *name;
	uint32_t size;
} g_dtypes[SPOTCKPT_DTYPE_COUNT] = {
	[SPOTCKPT_F32] = { "F32", 4 },   [SPOTCKPT_F16] = { "F16", 2 },
	[SPOTCKPT_BF16] = { "BF16", 2 }, [SPOTCKPT_F64] = { "F64", 8 },
	[SPOTCKPT_I64] = { "I64", 8 },   [SPOTCKPT_I32] = { "I32", 4 },
	[SPOTCKPT_I16] = { "I16", 2 },   [SPOTCKPT_I8] = { "I8", 1 },
	[SPOTCKPT_U8] = { "U8", 1 },     [SPOTCKPT_BOOL] = { "BOOL", 1 },
	[SPOTCKPT_U16] = { "U16", 2 },   [SPOTCKPT_U32] = { "U32", 4 },
	[SPOTCKPT_U64] = { "U64", 8 },
};

SPOTCKPT_API uint32_t spotckpt_dtype_size(int32_t dtype)
{
	if (dtype < 0 || dtype >= SPOTCKPT_DTYPE_COUNT)
		return 0;
	return g_dtypes[dtype].size;
}

SPOTCKPT_API const char *spotckpt_dtype_name(int32_t dtype)
{
	if (dtype < 0 || dtype >= SPOTCKPT_DTYPE_COUNT)
		return NULL;
	return g_dtypes[dtype].name;
}

int ckpt__dtype_parse(const char *s)
{
	for (int i = 0; i < SPOTCKPT_DTYPE_COUNT; i++) {
		if (!strcmp(s, g_dtypes[i].name))
			return i;
	}
	return -1;
}
