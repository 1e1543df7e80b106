// Fixture: the resource loop's objects.
export const objects = 1;
