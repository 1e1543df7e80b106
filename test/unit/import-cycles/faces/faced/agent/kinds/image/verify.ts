// Fixture: a file inside the Image kind.
export const verify = 1;
