/*
 * One hex digit's value, for every parser of hex text in csvsm and its
 * tools (the command line, the vTPM's JSON, policy files, verifier options).
 */
#ifndef BASE_HEX_H
#define BASE_HEX_H

/* 0-15 for [0-9a-fA-F], -1 for anything else (including NUL). */
static inline int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
