/* govctl: placeholder until the sim runner lands. */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "govctl: no subcommands yet\n");
	return 2;
}
