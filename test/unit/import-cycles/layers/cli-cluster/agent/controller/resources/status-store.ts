// Fixture: the resource loop's status store.
export const store = 1;
