// Fixture: a file inside the Image kind.
export const memory = 1;
