// Fixture: the command line.
export const main = 1;
