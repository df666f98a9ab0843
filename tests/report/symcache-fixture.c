/* SPDX-License-Identifier: MIT */
/*
 * A library built twice under one build id given by hand
 * (-Wl,--build-id=0x...), its function named FIXTURE_NAME: names of one
 * length, so that both builds put it at the same address. The symbol
 * cache must not give the first build's name for the second.
 */
int FIXTURE_NAME(int x);

int FIXTURE_NAME(int x)
{
	return 3 * x + 1;
}
