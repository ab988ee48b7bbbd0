/* Communication with derived datatypes (the library hands nmad the type's layout: no copy):
 * a matrix column as an MPI_Type_vector, received as contiguous ints and back into a column;
 * counts through the type; errors of uncommitted and freed types. Run with 2 processes. */
#include "check.h"

#define ROWS 6
#define COLS 5

int main(int argc, char **argv)
{
    int rank, size, peer, i, j, n = -1, m[ROWS][COLS], col[ROWS], big[2 * ROWS];
    MPI_Datatype column = MPI_DATATYPE_NULL, pair = MPI_DATATYPE_NULL, loose = MPI_DATATYPE_NULL, freed;
    MPI_Status st;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    CHECK(MPI_Type_vector(ROWS, 1, COLS, MPI_INT, &column) == MPI_SUCCESS && column != MPI_DATATYPE_NULL,
          "MPI_Type_vector: a column of a %dx%d int matrix", ROWS, COLS);
    CHECK(MPI_Type_size(column, &n) == MPI_SUCCESS && n == ROWS * 4, "MPI_Type_size(column): %d", n);
    CHECK_ERR(MPI_Send(m, 1, column, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "not committed");
    CHECK(MPI_Type_commit(&column) == MPI_SUCCESS, "MPI_Type_commit(column)");
    CHECK(MPI_Type_contiguous(2, MPI_INT, &pair) == MPI_SUCCESS && MPI_Type_commit(&pair) == MPI_SUCCESS,
          "MPI_Type_contiguous(2, INT), committed");
    CHECK(MPI_Type_vector(3, 1, 2, MPI_INT, &loose) == MPI_SUCCESS && MPI_Type_commit(&loose) == MPI_SUCCESS,
          "MPI_Type_vector(3, 1, 2, INT), committed");

    for (i = 0; i < ROWS; i++)
        for (j = 0; j < COLS; j++)
            m[i][j] = 1000 * rank + 10 * i + j;
    /* Column 2 goes out as a vector and arrives as ROWS contiguous ints. */
    CHECK(MPI_Sendrecv(&m[0][2], 1, column, peer, 1, col, ROWS, MPI_INT, peer, 1, MPI_COMM_WORLD, &st) ==
              MPI_SUCCESS,
          "MPI_Sendrecv of a column into contiguous ints");
    for (i = 0; i < ROWS; i++)
        CHECK(col[i] == 1000 * peer + 10 * i + 2, "element %d of the received column: %d", i, col[i]);
    CHECK(MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == ROWS, "MPI_Get_count(INT): %d", n);
    CHECK(MPI_Get_count(&st, column, &n) == MPI_SUCCESS && n == 1, "MPI_Get_count(column): 1");
    CHECK(MPI_Get_count(&st, pair, &n) == MPI_SUCCESS && n == ROWS / 2, "MPI_Get_count(pair): %d", n);

    /* Contiguous ints come back into column 4, nonblocking. */
    CHECK(MPI_Irecv(&m[0][4], 1, column, peer, 2, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "MPI_Irecv into a column");
    CHECK(MPI_Send(col, ROWS, MPI_INT, peer, 2, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send of the ints back");
    CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS, "MPI_Wait");
    for (i = 0; i < ROWS; i++)
        CHECK(m[i][4] == 1000 * rank + 10 * i + 2 && m[i][3] == 1000 * rank + 10 * i + 3,
              "row %d: column 4 holds our own column 2 again, column 3 untouched", i);

    /* Five ints into a 2-element strided receive (room for 6; an element covers ints 0, 2, 4 of
     * its extent of 5): only the blocks that arrived are written (ints 0 2 4 5 7); 5 ints are not
     * a whole number of 3-int elements. */
    for (i = 0; i < 2 * ROWS; i++)
        big[i] = -1;
    CHECK(MPI_Sendrecv(col, 5, MPI_INT, peer, 3, big, 2, loose, peer, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS,
          "MPI_Sendrecv of 5 ints into 2 strided elements");
    CHECK(big[0] == 1000 * rank + 2 && big[1] == -1 && big[2] == 1000 * rank + 12 && big[4] == 1000 * rank + 22 &&
              big[5] == 1000 * rank + 32 && big[6] == -1 && big[7] == 1000 * rank + 42 && big[8] == -1 &&
              big[9] == -1,
          "strided placement: %d %d %d %d %d %d %d %d %d %d", big[0], big[1], big[2], big[3], big[4], big[5],
          big[6], big[7], big[8], big[9]);
    CHECK(MPI_Get_count(&st, loose, &n) == MPI_SUCCESS && n == MPI_UNDEFINED, "MPI_Get_count(loose): MPI_UNDEFINED");
    CHECK_ERR(MPI_Sendrecv(col, ROWS, MPI_INT, peer, 4, big, 1, loose, peer, 4, MPI_COMM_WORLD, &st),
              MPI_ERR_TRUNCATE, "MPI_Sendrecv");

    freed = pair;
    CHECK(MPI_Type_free(&pair) == MPI_SUCCESS && pair == MPI_DATATYPE_NULL, "MPI_Type_free");
    CHECK_ERR(MPI_Send(col, 1, freed, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "invalid datatype");
    CHECK_ERR(MPI_Type_free(&pair), MPI_ERR_TYPE, "null datatype");
    {
        MPI_Datatype i = MPI_INT;
        CHECK_ERR(MPI_Type_free(&i), MPI_ERR_TYPE, "predefined");
    }
    CHECK_ERR(MPI_Type_vector(-1, 1, 1, MPI_INT, &pair), MPI_ERR_COUNT, "count");
    MPI_Type_free(&column);
    MPI_Type_free(&loose);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
