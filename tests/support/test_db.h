/* Helpers that several test programs share for their scratch files: SQL on a
 * hand-built database and removing the temporary directory at teardown. */
#ifndef TALLY_TEST_DB_H
#define TALLY_TEST_DB_H

#include <sqlite3.h>

/* Runs sql on db; any error fails the current test, naming the statement. */
void tl_test_exec_sql(sqlite3 *db, const char *sql);

/* Removes dir and everything under it (a teardown): 0, or -1 if that failed. */
int tl_test_remove_tree(const char *dir);

#endif
