// Fixture: a file inside the Image kind.
export const follows = 1;
