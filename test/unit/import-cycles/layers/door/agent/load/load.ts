// Fixture: the loader.
export const loadTree = 1;
